package dev.cohort.api.collective;

import java.util.Arrays;

/**
 * One collective call as issued by one rank: what it is, its sequence number in the group, and
 * the caller's buffers. Every rank issues the same collectives in the same order, so equal
 * sequence numbers name the same operation everywhere; {@link #signature()} is what must agree.
 *
 * @param kind          the operation
 * @param sequence      0-based position of this call among the group's calls on this rank
 *                      (sends and receives are numbered apart)
 * @param input         what this rank contributes ({@code null} for barrier, and for scatter(v) on
 *                      ranks other than the root); for in-place operations (allreduce, broadcast,
 *                      reduce) also the output
 * @param output        where the result goes, for allgather(v), reduce-scatter, all-to-all(v),
 *                      scatter(v), and gather(v) on the root; else {@code null}
 * @param op            the reduction, for allreduce, reduce-scatter and reduce; else {@code null}
 * @param root          the root rank of broadcast, reduce, gather(v) and scatter(v), the peer of
 *                      send and recv; else -1
 * @param counts        per-rank element counts of allgatherv, gatherv and scatterv (alike on every
 *                      rank); what this rank sends to each rank in all-to-all-v; {@code {tag}} for
 *                      send and recv; else {@code null}
 * @param receiveCounts what this rank receives from each rank in all-to-all-v; else {@code null}
 */
public record Collective(
        OpKind kind,
        long sequence,
        DenseBuffer input,
        DenseBuffer output,
        ReduceOp op,
        int root,
        int[] counts,
        int[] receiveCounts) {

    /** A call without receive counts (every kind but all-to-all-v). */
    public Collective(
            OpKind kind, long sequence, DenseBuffer input, DenseBuffer output, ReduceOp op, int root, int[] counts) {
        this(kind, sequence, input, output, op, root, counts, null);
    }

    /** A send's or recv's tag ({@code counts[0]}); -1 for collectives. */
    public int tag() {
        return kind.isPointToPoint() ? counts[0] : -1;
    }

    /** The element type, or {@code null} for barrier. */
    public DataType dataType() {
        return input != null ? input.dataType() : output == null ? null : output.dataType();
    }

    /**
     * What every rank must agree on: kind, type, lengths, reduction and root. For allgatherv,
     * gatherv and scatterv the per-rank counts replace this rank's length; all-to-all-v's counts
     * differ by rank and are checked pair by pair instead (what rank i sends to j is what j
     * receives from i).
     */
    public String signature() {
        if (kind.isPointToPoint()) {
            return kind.label() + " " + input.dataType().label() + "[" + input.count() + "] "
                    + (kind == OpKind.SEND ? "to" : "from") + " rank " + root + " tag " + counts[0];
        }
        StringBuilder s = new StringBuilder(kind.label());
        DataType type = dataType();
        if (type != null) {
            s.append(' ').append(type.label());
            if (kind.hasSharedCounts()) {
                s.append(" counts=").append(Arrays.toString(counts));
            } else if (kind != OpKind.ALLTOALLV) {
                s.append('[').append(agreedLength()).append(']');
            }
        }
        if (op != null) {
            s.append(' ').append(op);
        }
        if (root >= 0) {
            s.append(" root=").append(root);
        }
        return s.toString();
    }

    /**
     * The length every rank passes alike, for kinds without shared counts: the output's for
     * reduce-scatter and scatter, the input's otherwise; 0 for all-to-all-v and barrier.
     */
    public long agreedLength() {
        return switch (kind) {
            case REDUCE_SCATTER, SCATTER -> output.count();
            case BARRIER, ALLTOALLV -> 0;
            case ALLGATHERV, GATHERV, SCATTERV ->
                Arrays.stream(counts).asLongStream().sum();
            default -> input.count();
        };
    }

    /** For messages, e.g. {@code allreduce #17 (float32[1024] SUM)}. */
    public String describe() {
        String sig = signature();
        int space = sig.indexOf(' ');
        return kind.label() + " #" + sequence + (space < 0 ? "" : " (" + sig.substring(space + 1) + ")");
    }
}
