package dev.cohort.data;

import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Which examples one rank reads in an epoch, and in which order: pure and deterministic, the same
 * on every rank and in every run given the same inputs.
 *
 * <p>The words: the <em>stream</em> of an epoch is every example of the dataset, row group after
 * row group, the row groups permuted by (seed, epoch). A <em>segment</em> (see
 * {@link DataPosition}) splits a stream among its W ranks: rank r's <em>share</em> is the
 * contiguous {@code perRank} examples from {@code r * perRank} ({@link Remainder#PAD} repeats the
 * stream from its start to fill the last shares; {@link Remainder#DROP} leaves its tail out). A
 * rank reads its share in order (its <em>input</em>) and hands it out through a bounded shuffle
 * buffer seeded by (seed, epoch, segment, rank): its <em>order</em>. When a segment ends at
 * another world size, the stream of the next one is what it left: each rank's unconsumed share
 * examples in input order (pad copies left out), rank after rank, then the dropped tail.
 */
final class EpochPlan {

    /** The examples in this rank's share, in reading order (ids: the example's place in the dataset). */
    final int[] input;
    /** The order of hand-out: the j-th example handed out is {@code input[order[j]]}. */
    final int[] order;
    /** How many of the share's examples the position has consumed already. */
    final int consumed;
    /** The position this plan starts from, its current segment at this world size. */
    final DataPosition position;

    private final int worldSize;

    private EpochPlan(int[] input, int[] order, int consumed, DataPosition position, int worldSize) {
        this.input = input;
        this.order = order;
        this.consumed = consumed;
        this.position = position;
        this.worldSize = worldSize;
    }

    /** The share's size: examples per rank in the current segment. */
    int perRank() {
        return input.length;
    }

    /** The position once {@code handedOut} examples of the share are consumed in all. */
    DataPosition positionAt(int handedOut) {
        return position.consumed(worldSize, handedOut);
    }

    /** The number of batches of {@code batchSize} left in the share (the last may be short). */
    int stepsLeft(int batchSize) {
        return (input.length - consumed + batchSize - 1) / batchSize;
    }

    /**
     * This rank's plan for the epoch of {@code position}, at {@code worldSize}.
     *
     * @param rowGroupRows the rows of every row group of the dataset, in file order
     * @throws IllegalArgumentException when the position does not fit the dataset (it consumed
     *     more than a segment held)
     */
    static EpochPlan compute(
            long[] rowGroupRows,
            long seed,
            Remainder remainder,
            int shuffleBuffer,
            DataPosition position,
            int worldSize,
            int rank) {
        if (worldSize < 1 || rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException("rank " + rank + " is not in a world of " + worldSize);
        }
        int[] stream = epochStream(rowGroupRows, seed, position.epoch());
        int segments = position.segments();
        int current = segments > 0 && position.worldSize(segments - 1) == worldSize ? segments - 1 : segments;
        for (int s = 0; s < current; s++) {
            stream = leftAfter(stream, position, s, seed, remainder, shuffleBuffer);
        }
        int per = perRank(stream.length, worldSize, remainder);
        long consumed = current < segments ? position.perRank(current) : 0;
        if (consumed > per) {
            throw new IllegalArgumentException("the position '" + position + "' consumed " + consumed
                    + " examples per rank in segment " + current + ", which holds " + per
                    + " per rank: the position is from another dataset or other options (seed, remainder)");
        }
        int[] order = shuffleOrder(per, shuffleBuffer, random(seed, position.epoch(), current, rank));
        DataPosition start = position.consumed(worldSize, consumed);
        return new EpochPlan(share(stream, per, rank), order, (int) consumed, start, worldSize);
    }

    /** Every example id, row group after row group in the order (seed, epoch) permutes them. */
    static int[] epochStream(long[] rowGroupRows, long seed, int epoch) {
        int groups = rowGroupRows.length;
        long[] first = new long[groups + 1];
        for (int g = 0; g < groups; g++) {
            first[g + 1] = first[g] + rowGroupRows[g];
        }
        if (first[groups] > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(
                    "a dataset of more than " + Integer.MAX_VALUE + " examples is not supported: " + first[groups]);
        }
        int[] perm = new int[groups];
        for (int g = 0; g < groups; g++) {
            perm[g] = g;
        }
        SplittableRandom rng = random(seed, epoch, -1, -1);
        for (int i = groups - 1; i > 0; i--) {
            int j = rng.nextInt(i + 1);
            int t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        int[] stream = new int[(int) first[groups]];
        int at = 0;
        for (int g : perm) {
            for (long id = first[g]; id < first[g + 1]; id++) {
                stream[at++] = (int) id;
            }
        }
        return stream;
    }

    static int perRank(int examples, int worldSize, Remainder remainder) {
        return remainder == Remainder.DROP ? examples / worldSize : (examples + worldSize - 1) / worldSize;
    }

    /** Rank {@code rank}'s share of {@code stream}: {@code per} examples from {@code rank * per}, repeating the stream past its end. */
    private static int[] share(int[] stream, int per, int rank) {
        int[] out = new int[per];
        for (int i = 0; i < per; i++) {
            out[i] = stream[(int) (((long) rank * per + i) % stream.length)];
        }
        return out;
    }

    /** The stream segment {@code s} of {@code position} leaves for the next one (see the class comment). */
    private static int[] leftAfter(
            int[] stream, DataPosition position, int s, long seed, Remainder remainder, int shuffleBuffer) {
        int w = position.worldSize(s);
        int per = perRank(stream.length, w, remainder);
        long consumed = position.perRank(s);
        if (consumed > per) {
            throw new IllegalArgumentException("the position '" + position + "' consumed " + consumed
                    + " examples per rank in segment " + s + ", which holds " + per
                    + " per rank: the position is from another dataset or other options (seed, remainder)");
        }
        int[] left = new int[stream.length];
        int n = 0;
        boolean[] taken = new boolean[per];
        for (int r = 0; r < w; r++) {
            int[] order = shuffleOrder(per, shuffleBuffer, random(seed, position.epoch(), s, r));
            Arrays.fill(taken, false);
            for (int j = 0; j < consumed; j++) {
                taken[order[j]] = true;
            }
            for (int i = 0; i < per; i++) {
                long at = (long) r * per + i;
                if (!taken[i] && at < stream.length) {
                    left[n++] = stream[(int) at];
                }
            }
        }
        for (long at = (long) w * per; at < stream.length; at++) {
            left[n++] = stream[(int) at];
        }
        return Arrays.copyOf(left, n);
    }

    /**
     * The hand-out order of a bounded shuffle buffer of {@code bufferSize} over {@code n} inputs
     * read in order: the buffer fills with the first inputs; then each input read replaces a
     * random buffered one, which is handed out; at the end the buffer empties in random order.
     * So the j-th example handed out is always among the first {@code j + bufferSize} read, which
     * bounds the examples a loader holds. A buffer of 0 or 1 hands out in reading order.
     */
    static int[] shuffleOrder(int n, int bufferSize, SplittableRandom rng) {
        int size = Math.max(1, Math.min(bufferSize, n));
        int[] out = new int[n];
        int[] buffer = new int[size];
        int fill = 0;
        int j = 0;
        for (int i = 0; i < n; i++) {
            if (fill < size) {
                buffer[fill++] = i;
            } else {
                int k = rng.nextInt(size);
                out[j++] = buffer[k];
                buffer[k] = i;
            }
        }
        while (fill > 0) {
            int k = rng.nextInt(fill);
            out[j++] = buffer[k];
            buffer[k] = buffer[--fill];
        }
        return out;
    }

    /** A generator seeded by all four numbers (-1 where one does not apply). */
    private static SplittableRandom random(long seed, int epoch, int segment, int rank) {
        long mixed = seed;
        for (long part : new long[] {epoch, segment, rank}) {
            mixed = new SplittableRandom(mixed ^ (part * 0x9E3779B97F4A7C15L)).nextLong();
        }
        return new SplittableRandom(mixed);
    }
}
