package dev.cohort.api.collective;

import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * A collective failed: a peer was lost, timed out or disagreed, or the transport broke. After
 * this the group is unusable; rebuild it (the launcher restarts the workers, training resumes from
 * a checkpoint). Misuse by the caller is reported as {@link IllegalArgumentException} or
 * {@link IllegalStateException} instead, before anything is sent.
 *
 * <p>Besides its message, which names them for people, the exception carries what programs need:
 * this process's rank in the group, the call (its operation and sequence number), and the ranks
 * the failure is about (a lost peer, the ranks that never came) — all in the group's own ranks.
 */
public class CollectiveException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final int rank;
    private final transient Collective collective;
    private final List<Integer> peers;

    public CollectiveException(String message) {
        this(message, null);
    }

    public CollectiveException(String message, Throwable cause) {
        this(message, cause, -1, null, List.of());
    }

    /**
     * @param rank       this process's rank in the group, or -1 when unknown
     * @param collective the call that failed, or {@code null} (joining, closing)
     * @param peers      the group's ranks the failure is about: lost, missing or disagreeing
     */
    public CollectiveException(String message, Throwable cause, int rank, Collective collective, List<Integer> peers) {
        super(message, cause);
        this.rank = rank;
        this.collective = collective;
        this.peers = List.copyOf(peers);
    }

    /** This process's rank in the group whose call failed, when known. */
    public OptionalInt rank() {
        return rank < 0 ? OptionalInt.empty() : OptionalInt.of(rank);
    }

    /** The call that failed (operation, sequence number, buffers), when the failure belongs to one. */
    public Optional<Collective> collective() {
        return Optional.ofNullable(collective);
    }

    /** The group's ranks this failure is about: a lost peer, the ranks that never came; empty when none is known. */
    public List<Integer> peers() {
        return peers;
    }
}
