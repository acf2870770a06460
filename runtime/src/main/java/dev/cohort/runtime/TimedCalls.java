package dev.cohort.runtime;

import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.OpKind;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.api.collective.Work;
import java.util.Objects;

/**
 * The collectives of {@link ProcessGroup}, each started on {@link #engine()} with this group's
 * {@link #timeout()}: the one mapping from the public calls to the engine's, shared by a group
 * ({@link AbstractProcessGroup}, its own timeout) and its views with another ({@link TimeoutView}).
 */
abstract class TimedCalls implements ProcessGroup {

    /** The group that validates, numbers and runs the calls. */
    abstract AbstractProcessGroup engine();

    @Override
    public final Work allreduce(DenseBuffer data, ReduceOp op) {
        return engine().startAllreduce(data, op, timeout());
    }

    @Override
    public final Work broadcast(DenseBuffer data, int root) {
        return engine().startBroadcast(data, root, timeout());
    }

    @Override
    public final Work allgather(DenseBuffer input, DenseBuffer output) {
        return engine().startAllgather(input, output, timeout());
    }

    @Override
    public final Work allgatherv(DenseBuffer input, DenseBuffer output, int[] counts) {
        return engine().startAllgatherv(input, output, counts, timeout());
    }

    @Override
    public final Work reduceScatter(DenseBuffer input, DenseBuffer output, ReduceOp op) {
        return engine().startReduceScatter(input, output, op, timeout());
    }

    @Override
    public final Work barrier() {
        return engine().startBarrier(timeout());
    }

    @Override
    public final Work send(DenseBuffer data, int peer, int tag) {
        return engine().startPointToPoint(OpKind.SEND, data, peer, tag, timeout());
    }

    @Override
    public final Work recv(DenseBuffer data, int peer, int tag) {
        return engine().startPointToPoint(OpKind.RECV, data, peer, tag, timeout());
    }

    @Override
    public final Work reduce(DenseBuffer data, ReduceOp op, int root) {
        return engine().startReduce(data, op, root, timeout());
    }

    @Override
    public final Work gather(DenseBuffer input, DenseBuffer output, int root) {
        return engine().startGather(input, output, null, root, timeout());
    }

    @Override
    public final Work scatter(DenseBuffer input, DenseBuffer output, int root) {
        return engine().startScatter(input, output, null, root, timeout());
    }

    @Override
    public final Work gatherv(DenseBuffer input, DenseBuffer output, int[] counts, int root) {
        return engine().startGather(input, output, required(counts, "gatherv: counts"), root, timeout());
    }

    @Override
    public final Work scatterv(DenseBuffer input, DenseBuffer output, int[] counts, int root) {
        return engine().startScatter(input, output, required(counts, "scatterv: counts"), root, timeout());
    }

    @Override
    public final Work alltoall(DenseBuffer input, DenseBuffer output) {
        return engine().startAlltoall(input, null, output, null, timeout());
    }

    @Override
    public final Work alltoallv(DenseBuffer input, int[] sendCounts, DenseBuffer output, int[] receiveCounts) {
        return engine().startAlltoall(
                        input,
                        required(sendCounts, "alltoallv: sendCounts"),
                        output,
                        required(receiveCounts, "alltoallv: receiveCounts"),
                        timeout());
    }

    /** {@code counts}, or a NullPointerException that names it ({@code what}). */
    private static int[] required(int[] counts, String what) {
        return Objects.requireNonNull(counts, () -> what + " is null");
    }
}
