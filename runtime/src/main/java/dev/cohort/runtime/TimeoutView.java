package dev.cohort.runtime;

import dev.cohort.api.collective.BufferAllocator;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.OpKind;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.api.collective.Work;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/** A group seen with another timeout; shares everything else, closing it closes the group. */
final class TimeoutView implements ProcessGroup {
    private final AbstractProcessGroup group;
    private final Duration timeout;

    TimeoutView(AbstractProcessGroup group, Duration timeout) {
        this.group = group;
        this.timeout = timeout;
    }

    @Override
    public int rank() {
        return group.rank();
    }

    @Override
    public int size() {
        return group.size();
    }

    @Override
    public Duration timeout() {
        return timeout;
    }

    @Override
    public ProcessGroup withTimeout(Duration t) {
        return new TimeoutView(group, AbstractProcessGroup.checkTimeout(t));
    }

    @Override
    public Work allreduce(DenseBuffer d, ReduceOp op) {
        return group.startAllreduce(d, op, timeout);
    }

    @Override
    public Work broadcast(DenseBuffer d, int root) {
        return group.startBroadcast(d, root, timeout);
    }

    @Override
    public Work allgather(DenseBuffer i, DenseBuffer o) {
        return group.startAllgather(i, o, timeout);
    }

    @Override
    public Work allgatherv(DenseBuffer i, DenseBuffer o, int[] c) {
        return group.startAllgatherv(i, o, c, timeout);
    }

    @Override
    public Work reduceScatter(DenseBuffer i, DenseBuffer o, ReduceOp op) {
        return group.startReduceScatter(i, o, op, timeout);
    }

    @Override
    public Work barrier() {
        return group.startBarrier(timeout);
    }

    @Override
    public Work send(DenseBuffer d, int peer, int tag) {
        return group.startPointToPoint(OpKind.SEND, d, peer, tag, timeout);
    }

    @Override
    public Work recv(DenseBuffer d, int peer, int tag) {
        return group.startPointToPoint(OpKind.RECV, d, peer, tag, timeout);
    }

    @Override
    public Work reduce(DenseBuffer d, ReduceOp op, int root) {
        return group.startReduce(d, op, root, timeout);
    }

    @Override
    public Work gather(DenseBuffer i, DenseBuffer o, int root) {
        return group.startGather(i, o, null, root, timeout);
    }

    @Override
    public Work gatherv(DenseBuffer i, DenseBuffer o, int[] c, int root) {
        return group.startGather(i, o, Objects.requireNonNull(c, "gatherv: counts is null"), root, timeout);
    }

    @Override
    public Work scatter(DenseBuffer i, DenseBuffer o, int root) {
        return group.startScatter(i, o, null, root, timeout);
    }

    @Override
    public Work scatterv(DenseBuffer i, DenseBuffer o, int[] c, int root) {
        return group.startScatter(i, o, Objects.requireNonNull(c, "scatterv: counts is null"), root, timeout);
    }

    @Override
    public Work alltoall(DenseBuffer i, DenseBuffer o) {
        return group.startAlltoall(i, null, o, null, timeout);
    }

    @Override
    public Work alltoallv(DenseBuffer i, int[] s, DenseBuffer o, int[] r) {
        return group.startAlltoall(
                i,
                Objects.requireNonNull(s, "alltoallv: sendCounts is null"),
                o,
                Objects.requireNonNull(r, "alltoallv: receiveCounts is null"),
                timeout);
    }

    @Override
    public Optional<ProcessGroup> split(int color, int key) {
        return group.split(color, key);
    }

    @Override
    public Optional<ProcessGroup> newGroup(int... ranks) {
        return group.newGroup(ranks);
    }

    @Override
    public java.util.Optional<BufferAllocator> allocator() {
        return group.allocator();
    }

    @Override
    public void close() {
        group.close();
    }

    @Override
    public String toString() {
        return group + " (timeout " + timeout + ")";
    }
}
