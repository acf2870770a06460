package dev.cohort.runtime;

/** Where each rank's block lies in a gather's output or a scatter's input: per-rank counts laid end to end. */
public final class Blocks {

    private Blocks() {}

    /**
     * Where each of {@code n} ranks' blocks starts ({@code counts == null}: every block holds
     * {@code uniform} elements), and one entry more: the total.
     */
    public static long[] offsets(int[] counts, int uniform, int n) {
        long[] offsets = new long[n + 1];
        for (int r = 0; r < n; r++) {
            offsets[r + 1] = offsets[r] + (counts == null ? uniform : counts[r]);
        }
        return offsets;
    }

    /** The longest block of {@link #offsets}. */
    public static long longest(long[] offsets) {
        long most = 0;
        for (int r = 0; r + 1 < offsets.length; r++) {
            most = Math.max(most, offsets[r + 1] - offsets[r]);
        }
        return most;
    }
}
