package dev.cohort.runtime;

import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.OpKind;
import dev.cohort.api.collective.ReduceOp;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Validates one rank's calls on a group and numbers them: each method checks its arguments
 * (buffers, lengths, types, counts, roots, peers), with the same messages on every engine, and
 * returns the call with its sequence number (sends and receives are numbered apart).
 */
final class CallChecks {

    private final int rank;
    private final int size;
    private final AtomicLong sequence = new AtomicLong();
    private final AtomicLong messages = new AtomicLong();

    CallChecks(int rank, int size) {
        this.rank = rank;
        this.size = size;
    }

    Collective allreduce(DenseBuffer data, ReduceOp op) {
        checkWritable("allreduce", "data", data);
        Objects.requireNonNull(op, "allreduce: reduce op is null");
        return new Collective(OpKind.ALLREDUCE, sequence.getAndIncrement(), data, null, op, -1, null);
    }

    Collective broadcast(DenseBuffer data, int root) {
        Objects.requireNonNull(data, "broadcast: data buffer is null");
        checkRoot("broadcast", root);
        if (rank != root) {
            checkWritable("broadcast", "data", data);
        }
        return new Collective(OpKind.BROADCAST, sequence.getAndIncrement(), data, null, null, root, null);
    }

    Collective allgather(DenseBuffer input, DenseBuffer output) {
        Objects.requireNonNull(input, "allgather: input buffer is null");
        checkWritable("allgather", "output", output);
        checkSameType("allgather", input, output);
        if ((long) input.count() * size != output.count()) {
            throw new IllegalArgumentException("allgather: output must hold world size x input = " + size + " x "
                    + input.count() + " = " + (long) input.count() * size + " elements, got " + output.count());
        }
        return new Collective(OpKind.ALLGATHER, sequence.getAndIncrement(), input, output, null, -1, null);
    }

    Collective allgatherv(DenseBuffer input, DenseBuffer output, int[] counts) {
        Objects.requireNonNull(input, "allgatherv: input buffer is null");
        checkWritable("allgatherv", "output", output);
        checkSameType("allgatherv", input, output);
        Objects.requireNonNull(counts, "allgatherv: counts is null");
        long total = checkCounts("allgatherv", counts, input.count(), "input");
        if (total != output.count()) {
            throw new IllegalArgumentException(
                    "allgatherv: output must hold the sum of counts (" + total + ") elements, got " + output.count());
        }
        return new Collective(OpKind.ALLGATHERV, sequence.getAndIncrement(), input, output, null, -1, counts.clone());
    }

    Collective reduceScatter(DenseBuffer input, DenseBuffer output, ReduceOp op) {
        Objects.requireNonNull(input, "reduce-scatter: input buffer is null");
        checkWritable("reduce-scatter", "output", output);
        checkSameType("reduce-scatter", input, output);
        Objects.requireNonNull(op, "reduce-scatter: reduce op is null");
        if ((long) output.count() * size != input.count()) {
            throw new IllegalArgumentException("reduce-scatter: input must hold world size x output = " + size
                    + " x " + output.count() + " = " + (long) output.count() * size + " elements, got "
                    + input.count());
        }
        return new Collective(OpKind.REDUCE_SCATTER, sequence.getAndIncrement(), input, output, op, -1, null);
    }

    Collective barrier() {
        return new Collective(OpKind.BARRIER, sequence.getAndIncrement(), null, null, null, -1, null);
    }

    Collective pointToPoint(OpKind kind, DenseBuffer data, int peer, int tag) {
        String op = kind.label();
        if (kind == OpKind.RECV) {
            checkWritable(op, "data", data);
        } else {
            Objects.requireNonNull(data, () -> op + ": data buffer is null");
        }
        if (peer < 0 || peer >= size || peer == rank) {
            throw new IllegalArgumentException(op + ": peer must be another rank of this group of " + size
                    + " (this is " + rank + "), got " + peer);
        }
        if (tag < 0) {
            throw new IllegalArgumentException(op + ": tag must be >= 0, got " + tag);
        }
        return new Collective(kind, messages.getAndIncrement(), data, null, null, peer, new int[] {tag});
    }

    Collective reduce(DenseBuffer data, ReduceOp op, int root) {
        checkRoot("reduce", root);
        Objects.requireNonNull(op, "reduce: reduce op is null");
        if (rank == root) {
            checkWritable("reduce", "data", data);
        } else {
            Objects.requireNonNull(data, "reduce: data buffer is null");
        }
        return new Collective(OpKind.REDUCE, sequence.getAndIncrement(), data, null, op, root, null);
    }

    /** gather ({@code counts == null}) and gatherv. */
    Collective gather(DenseBuffer input, DenseBuffer output, int[] counts, int root) {
        String op = counts == null ? "gather" : "gatherv";
        checkRoot(op, root);
        Objects.requireNonNull(input, () -> op + ": input buffer is null");
        long total = counts == null ? (long) input.count() * size : checkCounts(op, counts, input.count(), "input");
        if (rank == root) {
            checkWritable(op, "output", output);
            checkSameType(op, input, output);
            checkRootHolds(op, "output", output, total, counts, "input", input);
        }
        return rooted(
                counts == null ? OpKind.GATHER : OpKind.GATHERV, input, rank == root ? output : null, root, counts);
    }

    /** scatter ({@code counts == null}) and scatterv. */
    Collective scatter(DenseBuffer input, DenseBuffer output, int[] counts, int root) {
        String op = counts == null ? "scatter" : "scatterv";
        checkRoot(op, root);
        checkWritable(op, "output", output);
        long total = counts == null ? (long) output.count() * size : checkCounts(op, counts, output.count(), "output");
        if (rank == root) {
            Objects.requireNonNull(input, () -> op + ": the root's input buffer is null");
            checkSameType(op, input, output);
            checkRootHolds(op, "input", input, total, counts, "output", output);
        }
        return rooted(
                counts == null ? OpKind.SCATTER : OpKind.SCATTERV, rank == root ? input : null, output, root, counts);
    }

    /**
     * The root's buffer of every rank's block ({@code whole}, its {@code name}) holds {@code total}
     * elements: world size x this rank's block ({@code mine}, its {@code mineName}), or the sum of
     * {@code counts}.
     */
    private void checkRootHolds(
            String op, String name, DenseBuffer whole, long total, int[] counts, String mineName, DenseBuffer mine) {
        if (total != whole.count()) {
            throw new IllegalArgumentException(op + ": the root's " + name + " must hold "
                    + (counts == null
                            ? "world size x " + mineName + " = " + size + " x " + mine.count() + " = "
                            : "the sum of counts (")
                    + total + (counts == null ? "" : ")") + " elements, got " + whole.count());
        }
    }

    /** A gather(v) or scatter(v), numbered. */
    private Collective rooted(OpKind kind, DenseBuffer input, DenseBuffer output, int root, int[] counts) {
        return new Collective(
                kind, sequence.getAndIncrement(), input, output, null, root, counts == null ? null : counts.clone());
    }

    /** alltoall ({@code sendCounts == null}) and alltoallv. */
    Collective alltoall(DenseBuffer input, int[] sendCounts, DenseBuffer output, int[] receiveCounts) {
        String op = sendCounts == null ? "alltoall" : "alltoallv";
        Objects.requireNonNull(input, () -> op + ": input buffer is null");
        checkWritable(op, "output", output);
        checkSameType(op, input, output);
        if (sendCounts == null) {
            if (input.count() % size != 0 || input.count() != output.count()) {
                throw new IllegalArgumentException(op + ": input and output must both hold world size (" + size
                        + ") blocks of equal length, got " + input.count() + " and " + output.count() + " elements");
            }
            return new Collective(OpKind.ALLTOALL, sequence.getAndIncrement(), input, output, null, -1, null);
        }
        long sent = sumOf(op, "sendCounts", sendCounts);
        long received = sumOf(op, "receiveCounts", receiveCounts);
        if (sent != input.count()) {
            throw new IllegalArgumentException(
                    op + ": input must hold the sum of sendCounts (" + sent + ") elements, got " + input.count());
        }
        if (received != output.count()) {
            throw new IllegalArgumentException(op + ": output must hold the sum of receiveCounts (" + received
                    + ") elements, got " + output.count());
        }
        return new Collective(
                OpKind.ALLTOALLV,
                sequence.getAndIncrement(),
                input,
                output,
                null,
                -1,
                sendCounts.clone(),
                receiveCounts.clone());
    }

    /** Validates per-rank counts (one per rank, none negative, this rank's {@code mine}); returns their sum. */
    private long checkCounts(String op, int[] counts, int mine, String buffer) {
        long total = sumOf(op, "counts", counts);
        if (counts[rank] != mine) {
            throw new IllegalArgumentException(op + ": counts[" + rank + "] (this rank) is " + counts[rank]
                    + " but the " + buffer + " holds " + mine + " elements");
        }
        return total;
    }

    private long sumOf(String op, String name, int[] counts) {
        if (counts.length != size) {
            throw new IllegalArgumentException(
                    op + ": " + name + " must have one entry per rank (" + size + "), got " + counts.length);
        }
        long total = 0;
        for (int r = 0; r < size; r++) {
            if (counts[r] < 0) {
                throw new IllegalArgumentException(op + ": " + name + "[" + r + "] is negative: " + counts[r]);
            }
            total += counts[r];
        }
        return total;
    }

    private void checkRoot(String op, int root) {
        if (root < 0 || root >= size) {
            throw new IllegalArgumentException(op + ": root must be in [0, " + size + "), got " + root);
        }
    }

    private static void checkWritable(String op, String name, DenseBuffer buffer) {
        Objects.requireNonNull(buffer, () -> op + ": " + name + " buffer is null");
        if (buffer.isReadOnly()) {
            throw new IllegalArgumentException(
                    op + ": " + name + " buffer " + buffer.describe() + " is read-only but receives the result");
        }
    }

    private static void checkSameType(String op, DenseBuffer input, DenseBuffer output) {
        if (input.dataType() != output.dataType()) {
            throw new IllegalArgumentException(
                    op + ": input is " + input.dataType().label() + " but output is "
                            + output.dataType().label());
        }
    }
}
