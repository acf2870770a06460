package dev.cohort.runtime.store;

/** Keys a rank waited for were not set before its deadline. */
public class StoreTimeoutException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public StoreTimeoutException(String message) {
        super(message);
    }
}
