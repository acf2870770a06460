package dev.cohort.runtime.store;

import java.util.ArrayList;
import java.util.List;

/** A namespace in another store: every key is stored under {@code prefix + key}. */
public final class PrefixStore implements Store {

    private final String prefix;
    private final Store store;

    public PrefixStore(String prefix, Store store) {
        this.prefix = prefix;
        this.store = store;
    }

    @Override
    public void set(String key, String value) {
        store.set(prefix + key, value);
    }

    @Override
    public String get(String key) {
        return store.get(prefix + key);
    }

    @Override
    public long add(String key, long delta) {
        return store.add(prefix + key, delta);
    }

    @Override
    public boolean check(String key) {
        return store.check(prefix + key);
    }

    @Override
    public void await(List<String> keys, long deadlineNanos) {
        List<String> prefixed = new ArrayList<>(keys.size());
        for (String key : keys) {
            prefixed.add(prefix + key);
        }
        store.await(prefixed, deadlineNanos);
    }
}
