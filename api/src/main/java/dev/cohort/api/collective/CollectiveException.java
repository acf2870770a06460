package dev.cohort.api.collective;

/**
 * A collective failed: a peer was lost, timed out or disagreed, or the transport broke. After
 * this the group is unusable; rebuild it (the launcher restarts the workers, training resumes from
 * a checkpoint). Misuse by the caller is reported as {@link IllegalArgumentException} or
 * {@link IllegalStateException} instead, before anything is sent.
 */
public class CollectiveException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public CollectiveException(String message) {
        super(message);
    }

    public CollectiveException(String message, Throwable cause) {
        super(message, cause);
    }
}
