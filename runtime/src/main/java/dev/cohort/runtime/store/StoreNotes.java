package dev.cohort.runtime.store;

import java.util.Optional;

/**
 * {@link JobNotes} kept in a {@link Store} whose every call is bounded by a short timeout of its
 * own (a {@link TcpStore} given one, see {@link TcpStore#timeout(java.time.Duration)}): the first
 * call that fails marks the store unreachable, and every later call returns at once.
 */
public final class StoreNotes implements JobNotes {

    private final Store store;
    private boolean unreachable;

    /** Notes in {@code store} (a {@link PrefixStore} keeps them apart from other keys). */
    public StoreNotes(Store store) {
        this.store = java.util.Objects.requireNonNull(store, "store");
    }

    @Override
    public synchronized boolean post(String key, String text) {
        if (unreachable) {
            return false;
        }
        try {
            store.set(key, text);
            // Answered once applied: a rank that sees this one leave and then reads finds the note.
            return store.check(key);
        } catch (RuntimeException e) {
            unreachable = true;
            return false;
        }
    }

    @Override
    public synchronized Optional<String> read(String key) {
        if (unreachable) {
            return Optional.empty();
        }
        try {
            return store.check(key) ? Optional.of(store.get(key)) : Optional.empty();
        } catch (RuntimeException e) {
            unreachable = true;
            return Optional.empty();
        }
    }
}
