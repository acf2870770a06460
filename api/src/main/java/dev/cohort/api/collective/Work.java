package dev.cohort.api.collective;

import java.time.Duration;
import java.util.Optional;

/**
 * The handle of a collective in flight. Its buffers belong to the operation until it is done;
 * read them only after {@link #await()} returns or {@link #isDone()} is true without a failure.
 */
public interface Work {

    /** The call this handle tracks. */
    Collective collective();

    /** True when the operation has finished, successfully or not. Never blocks. */
    boolean isDone();

    /** The failure, once the operation has failed. */
    Optional<CollectiveException> failure();

    /**
     * Waits until the operation finishes or its own timeout (given when it was issued) expires.
     *
     * @throws CollectiveException if it failed or timed out
     */
    void await();

    /**
     * Waits at most {@code timeout} (and never beyond the operation's own timeout).
     *
     * @throws CollectiveTimeoutException if it is still running after {@code timeout}; if that was
     *                                    before the operation's own timeout, it stays pending and
     *                                    may be awaited again
     * @throws CollectiveException        if it failed
     */
    void await(Duration timeout);
}
