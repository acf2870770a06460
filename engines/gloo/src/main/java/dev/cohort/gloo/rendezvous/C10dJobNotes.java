package dev.cohort.gloo.rendezvous;

import dev.cohort.libtorch.LibTorch;
import dev.cohort.runtime.store.JobNotes;
import java.time.Duration;
import java.util.Optional;
import org.bytedeco.javacpp.chrono.Milliseconds;
import org.bytedeco.pytorch.Store;
import org.bytedeco.pytorch.StringVector;

/**
 * {@link JobNotes} in the job's c10d rendezvous store: a call waits at most {@link #STORE_TIMEOUT}
 * for the store, and after the store failed to answer once, later calls give up at once.
 */
public final class C10dJobNotes implements JobNotes, AutoCloseable {

    static final Duration STORE_TIMEOUT = Duration.ofSeconds(2);

    private final Store store;
    private final String prefix;
    private boolean closed;
    private boolean unreachable;

    public C10dJobNotes(Store store, String prefix) {
        this.store = LibTorch.retain(store);
        this.store.setTimeout(new Milliseconds(STORE_TIMEOUT.toMillis()));
        this.prefix = prefix;
    }

    @Override
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

    @Override
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
