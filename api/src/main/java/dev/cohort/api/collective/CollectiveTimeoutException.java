package dev.cohort.api.collective;

import java.util.List;

/** A collective did not complete within its timeout; {@link #peers()} are the ranks it still waited for, when known. */
public class CollectiveTimeoutException extends CollectiveException {
    private static final long serialVersionUID = 1L;

    public CollectiveTimeoutException(String message, Throwable cause) {
        super(message, cause);
    }

    /** With this rank, the call and the peers (see {@link CollectiveException}). */
    public CollectiveTimeoutException(
            String message, Throwable cause, int rank, Collective collective, List<Integer> peers) {
        super(message, cause, rank, collective, peers);
    }
}
