package dev.cohort.api.collective;

/**
 * Ranks issued different collectives at the same sequence number (another operation, length,
 * type, reduction or root). Nothing was written to any output buffer.
 */
public class CollectiveMismatchException extends CollectiveException {
    private static final long serialVersionUID = 1L;

    public CollectiveMismatchException(String message) {
        super(message);
    }
}
