package dev.cohort.runtime;

/**
 * The check every engine makes before an all-to-all-v moves data: what rank i sends to rank j
 * ({@code send[i][j]}) must be what j receives from i ({@code receive[j][i]}). Engines gather
 * every rank's two count vectors first, so every rank finds the same disagreement and fails the
 * call alike, before any byte lands in an output.
 */
public final class AlltoallCounts {

    private AlltoallCounts() {}

    /**
     * Compares the counts of all ranks; {@code send[i]} and {@code receive[i]} are rank i's.
     *
     * @return {@code null} when every pair agrees; else a message naming the pairs that do not
     */
    public static String disagreement(String what, int[][] send, int[][] receive) {
        StringBuilder m = null;
        int shown = 0;
        int n = send.length;
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < n; j++) {
                if (send[i][j] != receive[j][i]) {
                    if (m == null) {
                        m = new StringBuilder(what).append(": ranks disagree on how much each sends to each:");
                    }
                    if (shown++ < 8) {
                        m.append("\n  rank ")
                                .append(i)
                                .append(" sends ")
                                .append(send[i][j])
                                .append(" elements to rank ")
                                .append(j)
                                .append(", which expects ")
                                .append(receive[j][i]);
                    }
                }
            }
        }
        if (m != null && shown > 8) {
            m.append("\n  and ").append(shown - 8).append(" more pair(s)");
        }
        return m == null ? null : m.toString();
    }

    /** Rank {@code r}'s counts at {@code [r·2n, (r+1)·2n)} of {@code all}: send counts, then receive counts. */
    public static String disagreement(String what, int[] all, int n) {
        int[][] send = new int[n][];
        int[][] receive = new int[n][];
        for (int r = 0; r < n; r++) {
            send[r] = java.util.Arrays.copyOfRange(all, 2 * n * r, 2 * n * r + n);
            receive[r] = java.util.Arrays.copyOfRange(all, 2 * n * r + n, 2 * n * (r + 1));
        }
        return disagreement(what, send, receive);
    }

    /** This rank's send counts followed by its receive counts: what {@link #disagreement(String, int[], int)} reads per rank. */
    public static int[] packed(int[] send, int[] receive) {
        int[] both = java.util.Arrays.copyOf(send, send.length + receive.length);
        System.arraycopy(receive, 0, both, send.length, receive.length);
        return both;
    }
}
