package dev.cohort.torch;

/**
 * PyTorch's {@code DistributedSampler}: each rank a disjoint shard of the dataset, reshuffled
 * every epoch by a permutation all ranks compute from the same seed. So every rank runs the same
 * number of steps, the dataset is either padded (by repeating examples from the start of the
 * permutation) to a multiple of the world size, or, with {@code dropLast}, cut to one.
 * Rank r takes positions r, r + n, r + 2n, ... of the (padded or cut) permutation.
 */
public record DistributedSampler(long size, int worldSize, int rank, boolean shuffle, long seed, boolean dropLast)
        implements Sampler {

    /** Checks the arguments: a rank of the world, a dataset of fewer than 2^31 examples, enough for every rank. */
    public DistributedSampler {
        if (worldSize < 1 || rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException("rank " + rank + " is not in a world of " + worldSize);
        }
        if (size < 0 || size > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("dataset size must be in [0, 2^31), got " + size);
        }
        if (dropLast && size < worldSize) {
            throw new IllegalArgumentException("with dropLast, " + size + " examples leave nothing for " + worldSize
                    + " workers");
        }
    }

    @Override
    public long length() {
        return dropLast ? size / worldSize : (size + worldSize - 1) / worldSize;
    }

    @Override
    public long[] indices(int epoch) {
        long[] order = ShuffleSampler.permutation(size, shuffle, seed, epoch);
        long total = length() * worldSize;
        long[] mine = new long[(int) length()];
        for (int k = 0; k < mine.length; k++) {
            long position = rank + (long) k * worldSize;    // < total
            mine[k] = order.length == 0 ? 0 : order[(int) (position % order.length)];
        }
        assert total >= mine.length;
        return mine;
    }
}
