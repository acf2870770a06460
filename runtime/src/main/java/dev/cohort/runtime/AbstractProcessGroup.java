package dev.cohort.runtime;

import dev.cohort.api.collective.Collective;

import dev.cohort.api.collective.BufferAllocator;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.OpKind;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.api.collective.Work;

import dev.cohort.api.Timeouts;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Validates every call, numbers it, and hands it to the engine through {@link #start}. Engines
 * extend this, so all engines reject bad input with the same messages.
 */
public abstract class AbstractProcessGroup implements ProcessGroup {

    private final int rank;
    /** "rank 3 of 4", built once. */
    private final String rankOfSize;
    private final int size;
    private final Duration timeout;
    private final AtomicLong sequence = new AtomicLong();
    private volatile boolean closed;

    protected AbstractProcessGroup(int rank, int size, Duration timeout) {
        if (size < 1) {
            throw new IllegalArgumentException("group size must be >= 1, got " + size);
        }
        if (rank < 0 || rank >= size) {
            throw new IllegalArgumentException("rank must be in [0, " + size + "), got " + rank);
        }
        this.rank = rank;
        this.size = size;
        this.rankOfSize = "rank " + rank + " of " + size;
        this.timeout = checkTimeout(timeout);
    }

    /** Runs {@code call} (already validated and numbered) with {@code timeout}. */
    protected abstract Work start(Collective call, Duration timeout);

    /** Releases engine resources; called once by {@link #close()}. */
    protected abstract void release();

    @Override
    public final int rank() {
        return rank;
    }

    @Override
    public final int size() {
        return size;
    }

    @Override
    public final Duration timeout() {
        return timeout;
    }

    @Override
    public ProcessGroup withTimeout(Duration timeout) {
        return new TimeoutView(this, checkTimeout(timeout));
    }

    public boolean isClosed() {
        return closed;
    }

    @Override
    public final Work allreduce(DenseBuffer data, ReduceOp op) {
        return startAllreduce(data, op, timeout);
    }

    @Override
    public final Work broadcast(DenseBuffer data, int root) {
        return startBroadcast(data, root, timeout);
    }

    @Override
    public final Work allgather(DenseBuffer input, DenseBuffer output) {
        return startAllgather(input, output, timeout);
    }

    @Override
    public final Work allgatherv(DenseBuffer input, DenseBuffer output, int[] counts) {
        return startAllgatherv(input, output, counts, timeout);
    }

    @Override
    public final Work reduceScatter(DenseBuffer input, DenseBuffer output, ReduceOp op) {
        return startReduceScatter(input, output, op, timeout);
    }

    @Override
    public final Work barrier() {
        return startBarrier(timeout);
    }

    @Override
    public final synchronized void close() {
        if (!closed) {
            closed = true;
            release();
        }
    }

    final Work startAllreduce(DenseBuffer data, ReduceOp op, Duration timeout) {
        checkOpen("allreduce");
        checkWritable("allreduce", "data", data);
        Objects.requireNonNull(op, "allreduce: reduce op is null");
        return start(new Collective(OpKind.ALLREDUCE, sequence.getAndIncrement(), data, null, op, -1, null), timeout);
    }

    final Work startBroadcast(DenseBuffer data, int root, Duration timeout) {
        checkOpen("broadcast");
        Objects.requireNonNull(data, "broadcast: data buffer is null");
        if (root < 0 || root >= size) {
            throw new IllegalArgumentException("broadcast: root must be in [0, " + size + "), got " + root);
        }
        if (rank != root) {
            checkWritable("broadcast", "data", data);
        }
        return start(new Collective(OpKind.BROADCAST, sequence.getAndIncrement(), data, null, null, root, null), timeout);
    }

    final Work startAllgather(DenseBuffer input, DenseBuffer output, Duration timeout) {
        checkOpen("allgather");
        Objects.requireNonNull(input, "allgather: input buffer is null");
        checkWritable("allgather", "output", output);
        checkSameType("allgather", input, output);
        if ((long) input.count() * size != output.count()) {
            throw new IllegalArgumentException("allgather: output must hold world size x input = " + size + " x "
                    + input.count() + " = " + (long) input.count() * size + " elements, got " + output.count());
        }
        return start(new Collective(OpKind.ALLGATHER, sequence.getAndIncrement(), input, output, null, -1, null), timeout);
    }

    final Work startAllgatherv(DenseBuffer input, DenseBuffer output, int[] counts, Duration timeout) {
        checkOpen("allgatherv");
        Objects.requireNonNull(input, "allgatherv: input buffer is null");
        checkWritable("allgatherv", "output", output);
        checkSameType("allgatherv", input, output);
        Objects.requireNonNull(counts, "allgatherv: counts is null");
        if (counts.length != size) {
            throw new IllegalArgumentException("allgatherv: counts must have one entry per rank (" + size
                    + "), got " + counts.length);
        }
        long total = 0;
        for (int r = 0; r < size; r++) {
            if (counts[r] < 0) {
                throw new IllegalArgumentException("allgatherv: counts[" + r + "] is negative: " + counts[r]);
            }
            total += counts[r];
        }
        if (counts[rank] != input.count()) {
            throw new IllegalArgumentException("allgatherv: counts[" + rank + "] (this rank) is " + counts[rank]
                    + " but the input holds " + input.count() + " elements");
        }
        if (total != output.count()) {
            throw new IllegalArgumentException("allgatherv: output must hold the sum of counts (" + total
                    + ") elements, got " + output.count());
        }
        return start(new Collective(OpKind.ALLGATHERV, sequence.getAndIncrement(), input, output, null, -1,
                counts.clone()), timeout);
    }

    final Work startReduceScatter(DenseBuffer input, DenseBuffer output, ReduceOp op, Duration timeout) {
        checkOpen("reduce-scatter");
        Objects.requireNonNull(input, "reduce-scatter: input buffer is null");
        checkWritable("reduce-scatter", "output", output);
        checkSameType("reduce-scatter", input, output);
        Objects.requireNonNull(op, "reduce-scatter: reduce op is null");
        if ((long) output.count() * size != input.count()) {
            throw new IllegalArgumentException("reduce-scatter: input must hold world size x output = " + size
                    + " x " + output.count() + " = " + (long) output.count() * size + " elements, got "
                    + input.count());
        }
        return start(new Collective(OpKind.REDUCE_SCATTER, sequence.getAndIncrement(), input, output, op, -1, null),
                timeout);
    }

    final Work startBarrier(Duration timeout) {
        checkOpen("barrier");
        return start(new Collective(OpKind.BARRIER, sequence.getAndIncrement(), null, null, null, -1, null), timeout);
    }

    /** "rank 3 of 4" — the prefix of this group's messages. */
    protected String who() {
        return rankOfSize;
    }

    private void checkOpen(String op) {
        if (closed) {
            throw new IllegalStateException(op + " on " + who() + ": the process group is closed");
        }
    }

    private static void checkWritable(String op, String name, DenseBuffer buffer) {
        Objects.requireNonNull(buffer, () -> op + ": " + name + " buffer is null");
        if (buffer.isReadOnly()) {
            throw new IllegalArgumentException(op + ": " + name + " buffer " + buffer.describe()
                    + " is read-only but receives the result");
        }
    }

    private static void checkSameType(String op, DenseBuffer input, DenseBuffer output) {
        if (input.dataType() != output.dataType()) {
            throw new IllegalArgumentException(op + ": input is " + input.dataType().label() + " but output is "
                    + output.dataType().label());
        }
    }

    static Duration checkTimeout(Duration timeout) {
        return Timeouts.requirePositive(timeout);
    }

    /** The group seen with another timeout; shares everything else, closing it closes the group. */
    private static final class TimeoutView implements ProcessGroup {
        private final AbstractProcessGroup group;
        private final Duration timeout;

        TimeoutView(AbstractProcessGroup group, Duration timeout) {
            this.group = group;
            this.timeout = timeout;
        }

        @Override public int rank() { return group.rank(); }
        @Override public int size() { return group.size(); }
        @Override public Duration timeout() { return timeout; }
        @Override public ProcessGroup withTimeout(Duration t) { return new TimeoutView(group, checkTimeout(t)); }
        @Override public Work allreduce(DenseBuffer d, ReduceOp op) { return group.startAllreduce(d, op, timeout); }
        @Override public Work broadcast(DenseBuffer d, int root) { return group.startBroadcast(d, root, timeout); }
        @Override public Work allgather(DenseBuffer i, DenseBuffer o) { return group.startAllgather(i, o, timeout); }
        @Override public Work allgatherv(DenseBuffer i, DenseBuffer o, int[] c) { return group.startAllgatherv(i, o, c, timeout); }
        @Override public Work reduceScatter(DenseBuffer i, DenseBuffer o, ReduceOp op) { return group.startReduceScatter(i, o, op, timeout); }
        @Override public Work barrier() { return group.startBarrier(timeout); }
        @Override public java.util.Optional<BufferAllocator> allocator() { return group.allocator(); }
        @Override public void close() { group.close(); }

        @Override
        public String toString() {
            return group + " (timeout " + timeout + ")";
        }
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "[" + who() + "]";
    }

}
