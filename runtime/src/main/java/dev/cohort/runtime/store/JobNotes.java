package dev.cohort.runtime.store;

import java.util.Optional;

/**
 * Short texts the ranks of one job leave each other in its store, for error messages: why a rank
 * gave up, read by ranks that only saw it vanish. Best effort: a call waits only briefly for the
 * store and says whether it worked instead of throwing, and after the store failed to answer once,
 * later calls give up at once (the store lives in one rank's process, which may be the one that
 * failed: a failing rank must not wait on it again and again).
 */
public interface JobNotes {

    /** Leaves {@code text} under {@code key}, replacing an earlier note; false when the store did not take it. */
    boolean post(String key, String text);

    /** The note under {@code key}, if one was left and the store answers; does not wait for one. */
    Optional<String> read(String key);
}
