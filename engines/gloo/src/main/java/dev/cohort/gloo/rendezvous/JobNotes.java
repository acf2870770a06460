package dev.cohort.gloo.rendezvous;

import dev.cohort.libtorch.LibTorch;
import java.time.Duration;
import java.util.Optional;
import org.bytedeco.javacpp.chrono.Milliseconds;
import org.bytedeco.pytorch.Store;
import org.bytedeco.pytorch.StringVector;

/**
 * Short texts the ranks of one job leave each other in its rendezvous store, for error messages:
 * why a rank gave up, read by ranks that only saw it vanish. Best effort: a call waits at most
 * {@link #STORE_TIMEOUT} for the store and says whether it worked instead of throwing, and after
 * the store failed to answer once, later calls give up at once (the store lives in rank 0's
 * process, which may be the one that failed: a failing rank must not wait on it again and again).
 */
public final class JobNotes implements AutoCloseable {

    static final Duration STORE_TIMEOUT = Duration.ofSeconds(2);

    private final Store store;
    private final String prefix;
    private boolean closed;
    private boolean unreachable;

    public JobNotes(Store store, String prefix) {
        this.store = LibTorch.retain(store);
        this.store.setTimeout(new Milliseconds(STORE_TIMEOUT.toMillis()));
        this.prefix = prefix;
    }

    /** Leaves {@code text} under {@code key}, replacing an earlier note; false when the store did not take it. */
    public synchronized boolean post(String key, String text) {
        if (closed || unreachable) {
            return false;
        }
        try {
            store.set(prefix + key, text);
            // A set is not answered; a check on the same connection is, after the set was applied.
            // So once this returns, a rank that sees this one leave and then reads finds the note.
            return store.check(new StringVector(prefix + key));
        } catch (RuntimeException e) {
            unreachable = true;
            return false;
        }
    }

    /** The note under {@code key}, if one was left and the store answers; does not wait for one. */
    public synchronized Optional<String> read(String key) {
        if (closed || unreachable) {
            return Optional.empty();
        }
        try {
            if (!store.check(new StringVector(prefix + key))) {
                return Optional.empty();
            }
            return Optional.of(store.get_to_str(prefix + key));
        } catch (RuntimeException e) {
            unreachable = true;
            return Optional.empty();
        }
    }

    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            LibTorch.release(store);
        }
    }
}
