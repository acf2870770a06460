package dev.cohort.shm;

import dev.cohort.api.collective.JoinException;

/** The ranks of the host could not attach to one shared mapping (timeout, mismatch, collision). */
public final class ShmConnectException extends JoinException {
    private static final long serialVersionUID = 1L;

    public ShmConnectException(String message) {
        super(message, null);
    }

    public ShmConnectException(String message, Throwable cause) {
        super(message, cause);
    }
}
