package dev.cohort.api.collective;


import java.util.Arrays;

/**
 * One collective call as issued by one rank: what it is, its sequence number in the group, and
 * the caller's buffers. Every rank issues the same collectives in the same order, so equal
 * sequence numbers name the same operation everywhere; {@link #signature()} is what must agree.
 *
 * @param kind       the operation
 * @param sequence   0-based position of this call among the group's calls on this rank
 * @param input      what this rank contributes ({@code null} for barrier); for in-place operations
 *                   (allreduce, broadcast) also the output
 * @param output     where the result goes, for allgather(v) and reduce-scatter; else {@code null}
 * @param op         the reduction, for allreduce and reduce-scatter; else {@code null}
 * @param root       the source rank of broadcast; else -1
 * @param counts     per-rank element counts of allgatherv; else {@code null}
 */
public record Collective(OpKind kind, long sequence, DenseBuffer input, DenseBuffer output,
                         ReduceOp op, int root, int[] counts) {

    /** The element type, or {@code null} for barrier. */
    public DataType dataType() {
        return input == null ? null : input.dataType();
    }

    /**
     * What every rank must agree on: kind, type, lengths, reduction and root. For allgatherv the
     * per-rank counts replace this rank's input length.
     */
    public String signature() {
        StringBuilder s = new StringBuilder(kind.label());
        if (input != null) {
            s.append(' ').append(input.dataType().label());
            if (kind == OpKind.ALLGATHERV) {
                s.append(" counts=").append(Arrays.toString(counts));
            } else {
                s.append('[').append(kind == OpKind.REDUCE_SCATTER ? output.count() : input.count()).append(']');
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

    /** For messages, e.g. {@code allreduce #17 (float32[1024] SUM)}. */
    public String describe() {
        String sig = signature();
        int space = sig.indexOf(' ');
        return kind.label() + " #" + sequence + (space < 0 ? "" : " (" + sig.substring(space + 1) + ")");
    }
}
