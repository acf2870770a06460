package dev.cohort.torch;

/**
 * PyTorch's {@code DistributedSampler}: each rank a disjoint shard of the dataset, reshuffled
 * every epoch by a permutation all ranks compute from the same seed. So every rank runs the same
 * number of steps, the dataset is either padded (by repeating examples from the start of the
 * permutation) to a multiple of the world size, or, with {@code dropLast}, cut to one.
 * Rank r takes positions r, r + n, r + 2n, ... of the (padded or cut) permutation.
 *
 * <p>With {@code skip}, the shard is of the permutation's positions from {@code skip} on: how an
 * epoch goes on after its first {@code skip} examples were trained on by another number of workers
 * (an elastic job that lost one); each global step of n workers with batch b takes positions
 * [k b n, (k + 1) b n).
 */
public record ShardSampler(long size, int worldSize, int rank, boolean shuffle, long seed, boolean dropLast, long skip)
        implements IndexSampler {

    /** The whole permutation (no {@code skip}). */
    public ShardSampler(long size, int worldSize, int rank, boolean shuffle, long seed, boolean dropLast) {
        this(size, worldSize, rank, shuffle, seed, dropLast, 0);
    }

    /** Checks the arguments: a rank of the world, a dataset of fewer than 2^31 examples, enough for every rank. */
    public ShardSampler {
        if (skip < 0) {
            throw new IllegalArgumentException("skip must not be negative, got " + skip);
        }
        if (worldSize < 1 || rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException("rank " + rank + " is not in a world of " + worldSize);
        }
        if (size < 0 || size > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("dataset size must be in [0, 2^31), got " + size);
        }
        if (dropLast && size < worldSize) {
            throw new IllegalArgumentException(
                    "with dropLast, " + size + " examples leave nothing for " + worldSize + " workers");
        }
    }

    @Override
    public long length() {
        long left = remaining();
        return dropLast ? left / worldSize : (left + worldSize - 1) / worldSize;
    }

    /** Examples of the permutation from {@code skip} on. */
    private long remaining() {
        return Math.max(0, size - skip);
    }

    @Override
    public long[] indices(int epoch) {
        long[] order = ShuffledSampler.permutation(size, shuffle, seed, epoch);
        long total = length() * worldSize;
        long[] mine = new long[(int) length()];
        long left = remaining();
        for (int k = 0; k < mine.length; k++) {
            long position = rank + (long) k * worldSize; // < total
            mine[k] = order.length == 0 ? 0 : order[(int) (skip + position % left)];
        }
        assert total >= mine.length;
        return mine;
    }
}
