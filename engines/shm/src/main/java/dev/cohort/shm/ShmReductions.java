package dev.cohort.shm;

import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.runtime.CallQueue;
import dev.cohort.shm.kernels.ReduceKernels;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The shm algorithms that reduce: allreduce (small, segmented, in place), reduce-scatter and
 * reduce to a root (see {@link ShmProcessGroup} for how each goes).
 */
final class ShmReductions extends ShmAlgorithms {

    ShmReductions(ShmSteps steps, ShmArena arena) {
        super(steps, arena);
    }

    /** Start (in elements) of part j of a segment of {@code full} elements, clipped to {@code len}. */
    private long partLo(long full, long len, int j, int e) {
        if (j >= n) {
            return len;
        }
        long perLine = ShmSteps.ALIGN / e;
        return Math.min(len, full * j / n / perLine * perLine);
    }

    void allreduce(CallQueue.Call t, MemorySegment user) {
        DenseBuffer data = t.collective().input();
        long count = data.count();
        if (onlySynchronises(t)) {
            return;
        }
        int e = data.dataType().byteSize();
        MemorySegment shm = steps.layout.memory();
        long bytes = count * e;
        if (bytes <= ShmProcessGroup.FLAT_MAX_BYTES && bytes <= steps.segment) {
            allreduceFlat(t, user, count, bytes);
            return;
        }
        long full = steps.segment / e;
        long nseg = Math.ceilDiv(count, full);
        for (long k = 0, s0 = 0; k < nseg; k++, s0 += full) {
            long len = Math.min(full, count - s0);
            int q = steps.stage(k);
            long mine = steps.layout.slot(me, q);
            for (int j = 0; j < n; j++) {
                if (j != me) {
                    long lo = partLo(full, len, j, e);
                    long hi = partLo(full, len, j + 1, e);
                    steps.copy(user, (s0 + lo) * e, shm, mine + lo * e, (hi - lo) * e);
                }
            }
            steps.sync(t, k == 0);
            if (k > 0) {
                copyResults(user, k - 1, full, count, e);
            }
            long lo = partLo(full, len, me, e);
            long hi = partLo(full, len, me + 1, e);
            for (int j = 0; j < n; j++) {
                steps.reduce.term(j, steps.layout.slot(j, q) + lo * e);
            }
            ReduceKernels.reduce(steps.reduce
                    .op(data.dataType(), t.collective().op())
                    .shm(shm)
                    .own(user, (s0 + lo) * e)
                    .count(hi - lo)
                    .out(user, (s0 + lo) * e)
                    .noResults()
                    .addResult(resultSlot(me, q) + lo * e));
        }
        steps.sync(t, false);
        copyResults(user, nseg - 1, full, count, e);
        steps.advance(nseg);
    }

    /** A small allreduce with one barrier (see the class comment). */
    private void allreduceFlat(CallQueue.Call t, MemorySegment user, long count, long bytes) {
        MemorySegment shm = steps.layout.memory();
        int q = steps.stage(0);
        steps.copy(user, 0, shm, steps.layout.slot(me, q), bytes);
        steps.sync(t, true);
        for (int j = 0; j < n; j++) {
            steps.reduce.term(j, steps.layout.slot(j, q));
        }
        ReduceKernels.reduce(steps.reduce
                .op(t.collective().input().dataType(), t.collective().op())
                .shm(shm)
                .own(user, 0)
                .count(count)
                .out(user, 0)
                .noResults());
        steps.advance(1);
    }

    /** The allreduce of a buffer at offset {@code mine} of this rank's arena (see the class comment). */
    void allreduceInPlace(CallQueue.Call t, long mine) {
        DenseBuffer data = t.collective().input();
        long count = data.count();
        steps.sync(t, true);
        if (count == 0 || n == 1) {
            return;
        }
        int e = data.dataType().byteSize();
        MemorySegment shared = arena.memory();
        long lo = partLo(count, count, me, e);
        long hi = partLo(count, count, me + 1, e);
        steps.reduce.noResults();
        long own = -1;
        for (int j = 0; j < n; j++) {
            long at = j == me
                    ? mine
                    : steps.layout
                            .memory()
                            .get(
                                    ValueLayout.JAVA_LONG,
                                    steps.layout.bufferAtOffset(
                                            j, t.collective().sequence()));
            long term = arena.areaOffset(j) + at + lo * e;
            steps.reduce.term(j, term);
            if (j == me) {
                own = term;
            } else {
                steps.reduce.addResult(term); // every peer's buffer, the first one first
            }
        }
        ReduceKernels.reduce(steps.reduce
                .op(data.dataType(), t.collective().op())
                .shm(shared)
                .own(shared, own)
                .count(hi - lo)
                .out(shared, own));
        steps.sync(t, false);
    }

    /** Where the rank that reduces part {@code owner} leaves its result (see the class comment). */
    private long resultSlot(int owner, int q) {
        return steps.layout.slot(n == 2 ? 1 - owner : owner, q);
    }

    private void copyResults(MemorySegment user, long k, long full, long count, int e) {
        long s0 = k * full;
        long len = Math.min(full, count - s0);
        int q = steps.stage(k);
        for (int j = 0; j < n; j++) {
            if (j != me) {
                long lo = partLo(full, len, j, e);
                long hi = partLo(full, len, j + 1, e);
                steps.copy(steps.layout.memory(), resultSlot(j, q) + lo * e, user, (s0 + lo) * e, (hi - lo) * e);
            }
        }
    }

    void reduceScatter(CallQueue.Call t) {
        DenseBuffer input = t.collective().input();
        DenseBuffer output = t.collective().output();
        long block = output.count();
        if (block == 0) {
            steps.sync(t, true);
            return;
        }
        int e = input.dataType().byteSize();
        MemorySegment in = steps.segmentOf(input);
        MemorySegment out = steps.segmentOf(output);
        MemorySegment shm = steps.layout.memory();
        long per = steps.perDestination(e); // elements of one block per steps.segment
        long nseg = Math.ceilDiv(block, per);
        for (long k = 0, s0 = 0; k < nseg; k++, s0 += per) {
            long len = Math.min(per, block - s0);
            int q = steps.stage(k);
            for (int j = 0; j < n; j++) {
                if (j != me) {
                    steps.copy(in, (j * block + s0) * e, shm, steps.layout.slot(me, q) + j * per * e, len * e);
                }
            }
            steps.sync(t, k == 0);
            for (int j = 0; j < n; j++) {
                steps.reduce.term(j, steps.layout.slot(j, q) + me * per * e);
            }
            ReduceKernels.reduce(steps.reduce
                    .op(input.dataType(), t.collective().op())
                    .shm(shm)
                    .own(in, (me * block + s0) * e)
                    .count(len)
                    .out(out, s0 * e)
                    .noResults());
        }
        steps.advance(nseg);
    }

    /** Reduce: every rank but the root copies a segment into its slot; after the barrier the root reduces them in rank order. */
    void reduceToRoot(CallQueue.Call t) {
        DenseBuffer data = t.collective().input();
        long count = data.count();
        if (onlySynchronises(t)) {
            return;
        }
        int root = t.collective().root();
        int e = data.dataType().byteSize();
        MemorySegment user = steps.segmentOf(data);
        MemorySegment shm = steps.layout.memory();
        long full = steps.segment / e;
        long nseg = Math.ceilDiv(count, full);
        for (long k = 0, s0 = 0; k < nseg; k++, s0 += full) {
            long len = Math.min(full, count - s0);
            int q = steps.stage(k);
            if (me != root) {
                steps.copy(user, s0 * e, shm, steps.layout.slot(me, q), len * e);
            }
            steps.sync(t, k == 0);
            if (me == root) {
                for (int j = 0; j < n; j++) {
                    steps.reduce.term(j, steps.layout.slot(j, q));
                }
                ReduceKernels.reduce(steps.reduce
                        .op(data.dataType(), t.collective().op())
                        .shm(shm)
                        .own(user, s0 * e)
                        .count(len)
                        .out(user, s0 * e)
                        .noResults());
            }
        }
        steps.advance(nseg);
    }
}
