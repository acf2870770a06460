package dev.cohort.data;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Where a rank stands in an epoch, the same on every rank: the epoch, and what the ranks have
 * consumed of it since it began, as segments. A segment is a stretch of the epoch run at one
 * world size: {@code worldSize} ranks each consumed {@code perRank} examples of their share of
 * the examples that the earlier segments left. From the segments every rank recomputes which
 * examples are consumed, so the position is small (a few numbers) whatever the dataset's size.
 *
 * <p>Its text form, {@link #toString()}, e.g. {@code "epoch 3: 4x1200, 2x64"}, is what
 * {@link #parse} reads; {@link #toBytes()} is that text in UTF-8, for a checkpoint.
 */
public final class DataPosition {

    private final int epoch;
    private final int[] worlds;
    private final long[] perRank;

    private DataPosition(int epoch, int[] worlds, long[] perRank) {
        if (epoch < 0) {
            throw new IllegalArgumentException("a data position's epoch is never negative: " + epoch);
        }
        for (int i = 0; i < worlds.length; i++) {
            if (worlds[i] < 1 || perRank[i] < 0) {
                throw new IllegalArgumentException(
                        "a segment needs worldSize >= 1 and perRank >= 0, not " + worlds[i] + "x" + perRank[i]);
            }
        }
        this.epoch = epoch;
        this.worlds = worlds;
        this.perRank = perRank;
    }

    /** The start of {@code epoch}: nothing consumed. */
    public static DataPosition start(int epoch) {
        return new DataPosition(epoch, new int[0], new long[0]);
    }

    public int epoch() {
        return epoch;
    }

    /** The number of segments. */
    int segments() {
        return worlds.length;
    }

    int worldSize(int segment) {
        return worlds[segment];
    }

    long perRank(int segment) {
        return perRank[segment];
    }

    /**
     * This position with {@code perRank} examples consumed per rank in a segment at
     * {@code worldSize}: the last segment's count is replaced when it has that world size, else a
     * segment is added (an empty last segment of another size is dropped first).
     */
    DataPosition consumed(int worldSize, long perRankConsumed) {
        int n = worlds.length;
        if (n > 0 && worlds[n - 1] == worldSize) {
            long[] p = perRank.clone();
            p[n - 1] = perRankConsumed;
            return new DataPosition(epoch, worlds, p);
        }
        int keep = n > 0 && perRank[n - 1] == 0 ? n - 1 : n;
        int[] w = java.util.Arrays.copyOf(worlds, keep + 1);
        long[] p = java.util.Arrays.copyOf(perRank, keep + 1);
        w[keep] = worldSize;
        p[keep] = perRankConsumed;
        return new DataPosition(epoch, w, p);
    }

    /** The text form {@link #toString()} writes. */
    public static DataPosition parse(String text) {
        String t = text.strip();
        if (!t.startsWith("epoch ")) {
            throw new IllegalArgumentException("not a data position (expected 'epoch N: WxK, ...'): '" + text + "'");
        }
        int colon = t.indexOf(':');
        try {
            int epoch = Integer.parseInt(
                    t.substring(6, colon < 0 ? t.length() : colon).strip());
            List<String> parts = new ArrayList<>();
            if (colon >= 0) {
                for (String s : t.substring(colon + 1).split(",")) {
                    if (!s.isBlank()) {
                        parts.add(s.strip());
                    }
                }
            }
            int[] w = new int[parts.size()];
            long[] p = new long[parts.size()];
            for (int i = 0; i < w.length; i++) {
                String[] wk = parts.get(i).split("x", 2);
                w[i] = Integer.parseInt(wk[0]);
                p[i] = Long.parseLong(wk[1]);
            }
            return new DataPosition(epoch, w, p);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException(
                    "not a data position (expected 'epoch N: WxK, ...'): '" + text + "': " + e.getMessage(), e);
        }
    }

    /** The text form in UTF-8. */
    public byte[] toBytes() {
        return toString().getBytes(StandardCharsets.UTF_8);
    }

    /** Reads what {@link #toBytes()} wrote. */
    public static DataPosition fromBytes(byte[] bytes) {
        return parse(new String(bytes, StandardCharsets.UTF_8));
    }

    @Override
    public String toString() {
        StringBuilder s = new StringBuilder("epoch ").append(epoch).append(':');
        for (int i = 0; i < worlds.length; i++) {
            s.append(i == 0 ? " " : ", ").append(worlds[i]).append('x').append(perRank[i]);
        }
        return s.toString();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof DataPosition other && toString().equals(other.toString());
    }

    @Override
    public int hashCode() {
        return toString().hashCode();
    }
}
