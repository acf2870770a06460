package dev.cohort.gloo;

import dev.cohort.api.collective.JoinException;

/** Joining the group failed: the store was unreachable, a rank missing, or the configuration bad. */
public class GlooConnectException extends JoinException {
    private static final long serialVersionUID = 1L;

    public GlooConnectException(String message, Throwable cause) {
        super(message, cause);
    }

    public GlooConnectException(String message) {
        super(message, null);
    }
}
