package dev.cohort.gloo;

import java.time.Duration;
import java.util.Optional;
import org.bytedeco.javacpp.chrono.Milliseconds;
import org.bytedeco.pytorch.Store;
import org.bytedeco.pytorch.StringVector;

/**
 * Short texts the ranks of one job leave each other in its rendezvous store, for error messages:
 * why a rank gave up, read by ranks that only saw it vanish. Best effort: every call waits at most
 * {@link #STORE_TIMEOUT} for the store and says whether it worked instead of throwing (the store
 * lives in rank 0's process, which may be the one that failed).
 */
public final class JobNotes implements AutoCloseable {

    static final Duration STORE_TIMEOUT = Duration.ofSeconds(2);

    private final Store store;
    private final String prefix;
    private boolean closed;

    JobNotes(Store store, String prefix) {
        this.store = LibTorch.retain(store);
        this.store.setTimeout(new Milliseconds(STORE_TIMEOUT.toMillis()));
        this.prefix = prefix;
    }

    /** Leaves {@code text} under {@code key}, replacing an earlier note; false when the store did not take it. */
    public synchronized boolean post(String key, String text) {
        if (closed) {
            return false;
        }
        try {
            store.set(prefix + key, text);
            return true;
        } catch (RuntimeException e) {
            return false;
        }
    }

    /** The note under {@code key}, if one was left and the store answers; does not wait for one. */
    public synchronized Optional<String> read(String key) {
        if (closed) {
            return Optional.empty();
        }
        try {
            if (!store.check(new StringVector(prefix + key))) {
                return Optional.empty();
            }
            return Optional.of(store.get_to_str(prefix + key));
        } catch (RuntimeException e) {
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
