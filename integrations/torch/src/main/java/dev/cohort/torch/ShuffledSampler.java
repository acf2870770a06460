package dev.cohort.torch;

/**
 * Every example once per epoch: in order, or shuffled by a permutation that depends only on
 * {@code seed} and the epoch (so a resumed run sees the same order).
 */
public final class ShuffledSampler implements IndexSampler {

    private final long size;
    private final boolean shuffle;
    private final long seed;

    public ShuffledSampler(long size, boolean shuffle, long seed) {
        if (size < 0 || size > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("dataset size must be in [0, 2^31), got " + size);
        }
        this.size = size;
        this.shuffle = shuffle;
        this.seed = seed;
    }

    @Override
    public long[] indices(int epoch) {
        return permutation(size, shuffle, seed, epoch);
    }

    @Override
    public long length() {
        return size;
    }

    /** 0..size-1, shuffled (Fisher-Yates) with a generator seeded by {@code seed + epoch} when asked. */
    static long[] permutation(long size, boolean shuffle, long seed, int epoch) {
        long[] order = new long[(int) size];
        for (int i = 0; i < order.length; i++) {
            order[i] = i;
        }
        if (shuffle) {
            java.util.SplittableRandom random = new java.util.SplittableRandom(seed * 0x9E3779B97F4A7C15L + epoch);
            for (int i = order.length - 1; i > 0; i--) {
                int j = random.nextInt(i + 1);
                long t = order[i];
                order[i] = order[j];
                order[j] = t;
            }
        }
        return order;
    }
}
