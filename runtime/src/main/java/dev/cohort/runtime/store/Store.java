package dev.cohort.runtime.store;

import java.util.List;

/**
 * The key-value store ranks bootstrap through, as c10d's {@code Store}: one rank publishes
 * (an address, a count), the others wait for it. Values are text. Implementations: {@link
 * InMemoryStore} (ranks as threads), {@link PrefixStore} (a namespace in another store), and
 * engines' adapters over their own stores.
 */
public interface Store {

    /** Sets {@code key} to {@code value}, replacing an earlier value. */
    void set(String key, String value);

    /**
     * The value under {@code key}. Call it for a key known to be set ({@link #await} first); an
     * implementation may wait up to a timeout of its own for a missing key, then throws.
     */
    String get(String key);

    /** Adds {@code delta} to the number under {@code key} (0 when unset) and returns the sum. */
    long add(String key, long delta);

    /** Whether {@code key} is set; does not wait. */
    boolean check(String key);

    /**
     * Returns once every one of {@code keys} is set.
     *
     * @throws StoreTimeoutException when {@code System.nanoTime()} reaches {@code deadlineNanos}
     *                               first (adapters may throw their store's own exception instead)
     */
    void await(List<String> keys, long deadlineNanos);
}
