package dev.cohort.api.collective;

import java.time.Duration;
import java.util.Optional;

/**
 * A fixed set of ranks that run collectives together. Every call is asynchronous: it returns a
 * {@link Work} at once; {@code work.await()} blocks until it is done or its timeout expires.
 * Every rank must issue the same collectives in the same order; all ranks receive bit-identical
 * results.
 *
 * <p>Each call has a timeout: the group's {@link #timeout()} (default
 * {@link #DEFAULT_TIMEOUT}), or another one for calls made through {@link #withTimeout}. When
 * a call fails or times out the group is unusable and must be closed.
 *
 * <p>Misuse (null or read-only output buffers, wrong lengths, a root out of range, a call after
 * {@link #close()}) throws {@link IllegalArgumentException} or {@link IllegalStateException} at
 * the call, before anything is sent.
 */
public interface ProcessGroup extends AutoCloseable {

    /** The default timeout of each collective: 5 minutes. */
    Duration DEFAULT_TIMEOUT = Duration.ofMinutes(5);

    /** This process's rank in the group, {@code 0 <= rank < size}. */
    int rank();

    /** The number of ranks. */
    int size();

    /** The timeout each call made through this object gets. */
    Duration timeout();

    /** The same group, with {@code timeout} for calls made through the returned object. */
    ProcessGroup withTimeout(Duration timeout);

    /** Combines {@code data} element-wise over all ranks, in place. */
    Work allreduce(DenseBuffer data, ReduceOp op);

    /** Copies {@code data} of rank {@code root} into {@code data} of every other rank. */
    Work broadcast(DenseBuffer data, int root);

    /**
     * Concatenates every rank's {@code input} (all of the same length) in rank order into each
     * rank's {@code output}, which holds {@code size() * input.count()} elements.
     */
    Work allgather(DenseBuffer input, DenseBuffer output);

    /**
     * Like {@link #allgather} with per-rank lengths: rank r contributes {@code counts[r]}
     * elements; {@code output} holds their sum; every rank passes the same {@code counts}.
     */
    Work allgatherv(DenseBuffer input, DenseBuffer output, int[] counts);

    /**
     * Reduces {@code input} ({@code size() * output.count()} elements) over all ranks and leaves
     * block r of the result, {@code output.count()} elements, in rank r's {@code output}.
     */
    Work reduceScatter(DenseBuffer input, DenseBuffer output, ReduceOp op);

    /** Completes once every rank has entered it. */
    Work barrier();

    /**
     * Combines {@code data} element-wise over all ranks into rank {@code root}'s {@code data}, in
     * place; the other ranks' {@code data} is only read.
     */
    Work reduce(DenseBuffer data, ReduceOp op, int root);

    /**
     * Concatenates every rank's {@code input} (all of the same length) in rank order into rank
     * {@code root}'s {@code output}, which holds {@code size() * input.count()} elements; other
     * ranks' {@code output} is ignored and may be null.
     */
    Work gather(DenseBuffer input, DenseBuffer output, int root);

    /**
     * Like {@link #gather} with per-rank lengths: rank r contributes {@code counts[r]} elements;
     * the root's {@code output} holds their sum; every rank passes the same {@code counts}.
     */
    Work gatherv(DenseBuffer input, DenseBuffer output, int[] counts, int root);

    /**
     * Sends block r of rank {@code root}'s {@code input} ({@code size() * output.count()}
     * elements) to rank r's {@code output}; other ranks' {@code input} is ignored and may be null.
     */
    Work scatter(DenseBuffer input, DenseBuffer output, int root);

    /**
     * Like {@link #scatter} with per-rank lengths: rank r receives {@code counts[r]} elements,
     * the root's {@code input} holds their sum, in rank order; every rank passes the same
     * {@code counts}.
     */
    Work scatterv(DenseBuffer input, DenseBuffer output, int[] counts, int root);

    /**
     * Block j of every rank's {@code input} goes to rank j, which keeps rank i's block as block i
     * of its {@code output}; input and output each hold {@code size()} blocks of equal length.
     */
    Work alltoall(DenseBuffer input, DenseBuffer output);

    /**
     * Like {@link #alltoall} with per-pair lengths: this rank sends the next
     * {@code sendCounts[j]} elements of {@code input} to rank j and receives
     * {@code receiveCounts[i]} elements from rank i into {@code output}, in rank order. What rank i
     * sends to j must be what j receives from i; a pair that disagrees fails the call on every rank
     * with a {@link CollectiveMismatchException} before any data is written.
     */
    Work alltoallv(DenseBuffer input, int[] sendCounts, DenseBuffer output, int[] receiveCounts);

    /**
     * Sends {@code data} to rank {@code peer}, to be received by its {@link #recv} with the same
     * {@code tag} (a message between two ranks, not a collective: the other ranks take no part).
     * Messages from one rank to another with one tag arrive in the order they were sent. The work
     * completes once the bytes are on their way; until then {@code data} must not change (a heap
     * array is copied at the call and may change at once).
     *
     * @param tag any number {@code >= 0}
     */
    Work send(DenseBuffer data, int peer, int tag);

    /**
     * Receives into {@code data} the next message rank {@code peer} sent with {@code tag}; the
     * message must have {@code data}'s length in bytes (else the receive fails, naming both). The
     * work completes once the bytes are in {@code data}; it fails at the timeout when no message
     * came.
     */
    Work recv(DenseBuffer data, int peer, int tag);

    /**
     * Splits this group into disjoint subgroups (MPI's {@code comm_split}): the ranks that pass the
     * same {@code color} form one, ranked by {@code key} (ties by rank in this group); a negative
     * color leaves this rank out. A collective of this group: every rank calls it, in order with
     * its other calls, and waits for the subgroup to connect (up to this group's timeout). A
     * subgroup has its own ranks, sequence numbers and connections, and this group's timeout;
     * several may run collectives at once. Its messages name ranks by their global ranks. Close it
     * before this group.
     *
     * @return this rank's subgroup, or empty for a negative color
     */
    Optional<ProcessGroup> split(int color, int key);

    /**
     * The group of {@code ranks} of this group, ranked in that order (torch's {@code new_group}):
     * a collective of this group, every rank passing the same ranks (checked: a rank that passes
     * others fails the call on every rank); empty on ranks not listed.
     */
    Optional<ProcessGroup> newGroup(int... ranks);

    /**
     * Where to allocate buffers that this group's collectives move without copying them in and
     * out, if the engine offers that (the shm engine does); empty by default.
     */
    default Optional<BufferAllocator> allocator() {
        return Optional.empty();
    }

    /** Releases the group's resources. Pending operations fail. Idempotent. */
    @Override
    void close();
}
