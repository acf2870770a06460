package dev.cohort.api.collective;

import java.util.List;

/**
 * Ranks issued different collectives at the same sequence number (another operation, length,
 * type, reduction or root). Nothing was written to any output buffer.
 */
public class CollectiveMismatchException extends CollectiveException {
    private static final long serialVersionUID = 1L;

    public CollectiveMismatchException(String message) {
        super(message);
    }

    /** With this rank, the call and the peers (see {@link CollectiveException}). */
    public CollectiveMismatchException(
            String message, Throwable cause, int rank, Collective collective, List<Integer> peers) {
        super(message, cause, rank, collective, peers);
    }
}
