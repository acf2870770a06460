package dev.cohort.shm;

import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.CollectiveMismatchException;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.runtime.AlltoallCounts;
import dev.cohort.runtime.Blocks;
import dev.cohort.runtime.CallQueue;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.List;

/**
 * The shm algorithms that move data without reducing it: broadcast (copying and in place),
 * allgather(v), gather(v), scatter(v) and all-to-all(v) (see {@link ShmProcessGroup} for how each
 * goes).
 */
final class ShmMoves extends ShmAlgorithms {

    ShmMoves(ShmSteps steps, ShmArena arena) {
        super(steps, arena);
    }

    void broadcast(CallQueue.Call t) {
        DenseBuffer data = t.collective().input();
        long count = data.count();
        int root = t.collective().root();
        if (onlySynchronises(t)) {
            return;
        }
        int e = data.dataType().byteSize();
        MemorySegment user = steps.segmentOf(data);
        long full = steps.segment / e;
        long nseg = (count + full - 1) / full;
        for (long k = 0; k < nseg; k++) {
            long s0 = k * full;
            long len = Math.min(full, count - s0);
            long at = steps.layout.slot(root, steps.stage(k));
            if (me == root) {
                steps.copy(user, s0 * e, steps.layout.memory(), at, len * e);
            }
            steps.sync(t, k == 0);
            if (me != root) {
                steps.copy(steps.layout.memory(), at, user, s0 * e, len * e);
            }
        }
        steps.advance(nseg);
    }

    /** The broadcast of a buffer at offset {@code mine} of this rank's arena (see the class comment). */
    void broadcastInPlace(CallQueue.Call t, long mine) {
        DenseBuffer data = t.collective().input();
        int root = t.collective().root();
        steps.sync(t, true);
        if (data.count() == 0 || n == 1) {
            return;
        }
        if (me != root) {
            long at = steps.layout
                    .memory()
                    .get(
                            ValueLayout.JAVA_LONG,
                            steps.layout.bufferAtOffset(root, t.collective().sequence()));
            MemorySegment shared = arena.memory();
            steps.copy(shared, arena.areaOffset(root) + at, shared, arena.areaOffset(me) + mine, data.byteSize());
        }
        steps.sync(t, false);
    }

    void allgather(CallQueue.Call t, int[] countsOrNull) {
        DenseBuffer input = t.collective().input();
        DenseBuffer output = t.collective().output();
        int e = input.dataType().byteSize();
        long[] counts = new long[n];
        long[] offsets = new long[n];
        long total = 0;
        long most = 0;
        for (int j = 0; j < n; j++) {
            counts[j] = countsOrNull == null ? input.count() : countsOrNull[j];
            offsets[j] = total;
            total += counts[j];
            most = Math.max(most, counts[j]);
        }
        MemorySegment in = steps.segmentOf(input);
        MemorySegment out = steps.segmentOf(output);
        steps.copy(in, 0, out, offsets[me] * e, counts[me] * e);
        long full = steps.segment / e;
        long nseg = n == 1 ? 0 : (most + full - 1) / full;
        if (nseg == 0) {
            steps.sync(t, true);
            return;
        }
        for (long k = 0; k < nseg; k++) {
            long s0 = k * full;
            int q = steps.stage(k);
            long mineLen = Math.max(0, Math.min(full, counts[me] - s0));
            if (mineLen > 0) {
                steps.copy(in, s0 * e, steps.layout.memory(), steps.layout.slot(me, q), mineLen * e);
            }
            steps.sync(t, k == 0);
            for (int j = 0; j < n; j++) {
                long len = Math.max(0, Math.min(full, counts[j] - s0));
                if (j != me && len > 0) {
                    steps.copy(steps.layout.memory(), steps.layout.slot(j, q), out, (offsets[j] + s0) * e, len * e);
                }
            }
        }
        steps.advance(nseg);
    }

    void gather(CallQueue.Call t) {
        rooted(t, true);
    }

    void scatter(CallQueue.Call t) {
        rooted(t, false);
    }

    /**
     * Gather(v) ({@code toRoot}) and scatter(v) through {@link #exchange}: the root's buffer holds
     * one block per rank, by rank; every other rank sends its block to the root, or receives its
     * own from it. The root's own block is copied directly.
     */
    private void rooted(CallQueue.Call t, boolean toRoot) {
        Collective c = t.collective();
        boolean isRoot = me == c.root();
        int own = (toRoot ? c.input() : c.output()).count();
        long[] offsets = Blocks.offsets(c.counts(), own, n);
        long[] none = new long[n];
        // What moves between this rank and each rank: on the root every block, elsewhere its own.
        long[] moved = new long[n];
        if (isRoot) {
            for (int j = 0; j < n; j++) {
                moved[j] = offsets[j + 1] - offsets[j];
            }
        } else {
            moved[c.root()] = own;
        }
        long longest = Blocks.longest(offsets);
        if (toRoot) {
            long[] sent = isRoot ? new long[n] : moved;
            sent[me] = isRoot ? own : 0;
            exchange(t, c.input(), none, sent, c.output(), offsets, isRoot ? moved : none, longest, false, false);
        } else {
            exchange(
                    t,
                    isRoot ? c.input() : null,
                    isRoot ? offsets : none,
                    isRoot ? moved : none,
                    c.output(),
                    none,
                    isRoot ? none : moved,
                    longest,
                    true,
                    false);
        }
    }

    void alltoall(CallQueue.Call t) {
        Collective c = t.collective();
        long block = c.input().count() / n;
        long[] offsets = Blocks.offsets(null, (int) block, n);
        long[] counts = new long[n];
        Arrays.fill(counts, block);
        exchange(t, c.input(), offsets, counts, c.output(), offsets, counts, block, true, false);
    }

    /** First every rank's send and receive counts through the slots, so every rank checks every pair; then the blocks. */
    void alltoallv(CallQueue.Call t) {
        Collective c = t.collective();
        int[] packed = AlltoallCounts.packed(c.counts(), c.receiveCounts());
        MemorySegment shm = steps.layout.memory();
        int q = steps.stage(0);
        MemorySegment.copy(packed, 0, shm, ValueLayout.JAVA_INT, steps.layout.slot(me, q), packed.length);
        steps.sync(t, true);
        int[] all = new int[packed.length * n];
        for (int j = 0; j < n; j++) {
            MemorySegment.copy(
                    shm, ValueLayout.JAVA_INT, steps.layout.slot(j, q), all, j * packed.length, packed.length);
        }
        steps.advance(1);
        String disagreement = AlltoallCounts.disagreement(t.describe(), all, n);
        if (disagreement != null) {
            throw new CollectiveMismatchException(disagreement, null, me, c, List.of());
        }
        long longest = 0;
        for (int x : all) {
            longest = Math.max(longest, x);
        }
        long[] sendOffsets = new long[n];
        long[] sendCounts = new long[n];
        long[] receiveOffsets = new long[n];
        long[] receiveCounts = new long[n];
        for (int j = 0; j < n; j++) {
            sendCounts[j] = c.counts()[j];
            receiveCounts[j] = c.receiveCounts()[j];
            if (j + 1 < n) {
                sendOffsets[j + 1] = sendOffsets[j] + sendCounts[j];
                receiveOffsets[j + 1] = receiveOffsets[j] + receiveCounts[j];
            }
        }
        exchange(t, c.input(), sendOffsets, sendCounts, c.output(), receiveOffsets, receiveCounts, longest, true, true);
    }

    /**
     * Gather, scatter and all-to-all(v): this rank sends {@code sendCounts[j]} elements of
     * {@code input} from {@code sendOffsets[j]} to rank j, and receives {@code receiveCounts[i]}
     * from rank i into {@code output} at {@code receiveOffsets[i]} (its own block it copies
     * directly). Segment k carries elements {@code [k P, (k+1) P)} of every pair's block: rank i
     * copies its block for j into sub-slot j of its slot ({@code perDestination}; else, with one
     * destination, the whole slot), and after the barrier j copies sub-slot j of every i's slot
     * out. {@code longest}, the most elements any pair moves, sets the segments, alike on every rank.
     */
    private void exchange(
            CallQueue.Call t,
            DenseBuffer input,
            long[] sendOffsets,
            long[] sendCounts,
            DenseBuffer output,
            long[] receiveOffsets,
            long[] receiveCounts,
            long longest,
            boolean perDestination,
            boolean tagsChecked) {
        int e = t.collective().dataType().byteSize();
        MemorySegment in = input == null ? null : steps.segmentOf(input);
        MemorySegment out = output == null ? null : steps.segmentOf(output);
        if (in != null && out != null && sendCounts[me] > 0) {
            steps.copy(in, sendOffsets[me] * e, out, receiveOffsets[me] * e, sendCounts[me] * e);
        }
        long per = perDestination ? steps.perDestination(e) : steps.segment / e;
        long nseg = n == 1 ? 0 : (longest + per - 1) / per;
        if (nseg == 0) {
            if (!tagsChecked) {
                steps.sync(t, true);
            }
            return;
        }
        MemorySegment shm = steps.layout.memory();
        for (long k = 0; k < nseg; k++) {
            long s0 = k * per;
            int q = steps.stage(k);
            for (int j = 0; j < n; j++) {
                long len = Math.max(0, Math.min(per, sendCounts[j] - s0));
                if (j != me && len > 0) {
                    steps.copy(
                            in,
                            (sendOffsets[j] + s0) * e,
                            shm,
                            steps.layout.slot(me, q) + (perDestination ? j * per * e : 0),
                            len * e);
                }
            }
            steps.sync(t, k == 0 && !tagsChecked);
            for (int i = 0; i < n; i++) {
                long len = Math.max(0, Math.min(per, receiveCounts[i] - s0));
                if (i != me && len > 0) {
                    steps.copy(
                            shm,
                            steps.layout.slot(i, q) + (perDestination ? me * per * e : 0),
                            out,
                            (receiveOffsets[i] + s0) * e,
                            len * e);
                }
            }
        }
        steps.advance(nseg);
    }
}
