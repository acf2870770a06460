package dev.cohort.runtime.auth;

/** A connection that did not prove it belongs to the job, or whose other end did not. */
public final class AuthenticationException extends RuntimeException {

    public AuthenticationException(String message) {
        super(message);
    }
}
