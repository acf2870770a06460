package dev.cohort.api.collective;

/** A collective did not complete within its timeout. */
public class CollectiveTimeoutException extends CollectiveException {
    private static final long serialVersionUID = 1L;

    public CollectiveTimeoutException(String message) {
        super(message);
    }

    public CollectiveTimeoutException(String message, Throwable cause) {
        super(message, cause);
    }
}
