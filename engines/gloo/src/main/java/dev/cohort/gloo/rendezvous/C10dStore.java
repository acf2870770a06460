package dev.cohort.gloo.rendezvous;

import dev.cohort.runtime.store.Store;
import java.util.List;
import org.bytedeco.javacpp.chrono.Milliseconds;
import org.bytedeco.pytorch.StringVector;

/**
 * A c10d store seen as Cohort's {@link Store}. It does not own {@code store}: whoever made it
 * keeps it alive (see {@link Rendezvous} for why c10d stores are passed on with care). Errors are
 * c10d's own, as they come (a missed deadline among them).
 */
public final class C10dStore implements Store {

    private final org.bytedeco.pytorch.Store store;

    public C10dStore(org.bytedeco.pytorch.Store store) {
        this.store = store;
    }

    @Override
    public void set(String key, String value) {
        store.set(key, value);
    }

    @Override
    public String get(String key) {
        return store.get_to_str(key);
    }

    @Override
    public long add(String key, long delta) {
        return store.add(key, delta);
    }

    @Override
    public boolean check(String key) {
        return store.check(new StringVector(key));
    }

    @Override
    public void await(List<String> keys, long deadlineNanos) {
        long left = Math.max(1, (deadlineNanos - System.nanoTime()) / 1_000_000);
        store._wait(new StringVector(keys.toArray(String[]::new)), new Milliseconds(left));
    }
}
