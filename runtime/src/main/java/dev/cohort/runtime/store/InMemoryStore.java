package dev.cohort.runtime.store;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;

/** A store in this JVM's memory, for ranks that are threads of one process. */
public final class InMemoryStore implements Store {

    private final Map<String, String> values = new HashMap<>();
    /** How many calls are inside {@link #await} now. */
    private int waiting;

    @Override
    public synchronized void set(String key, String value) {
        values.put(key, value);
        notifyAll();
    }

    /** @throws NoSuchElementException when {@code key} is not set (this store does not wait) */
    @Override
    public synchronized String get(String key) {
        String value = values.get(key);
        if (value == null) {
            throw new NoSuchElementException("no key '" + key + "' in the store");
        }
        return value;
    }

    @Override
    public synchronized long add(String key, long delta) {
        long sum = Long.parseLong(values.getOrDefault(key, "0")) + delta;
        values.put(key, Long.toString(sum));
        notifyAll();
        return sum;
    }

    @Override
    public synchronized boolean check(String key) {
        return values.containsKey(key);
    }

    @Override
    public synchronized void await(List<String> keys, long deadlineNanos) {
        waiting++;
        notifyAll();
        try {
            awaitKeys(keys, deadlineNanos);
        } finally {
            waiting--;
        }
    }

    /**
     * Returns true once {@code n} calls are inside {@link #await} at the same time, false at
     * {@code deadlineNanos}: for a test that must know a wait began before it acts.
     */
    synchronized boolean awaitWaiting(int n, long deadlineNanos) throws InterruptedException {
        while (waiting < n) {
            long left = deadlineNanos - System.nanoTime();
            if (left <= 0) {
                return false;
            }
            wait(Math.max(1, left / 1_000_000));
        }
        return true;
    }

    private void awaitKeys(List<String> keys, long deadlineNanos) {
        while (!values.keySet().containsAll(keys)) {
            long left = deadlineNanos - System.nanoTime();
            if (left <= 0) {
                throw new StoreTimeoutException("keys "
                        + keys.stream().filter(k -> !values.containsKey(k)).toList() + " were not set in time");
            }
            try {
                wait(Math.max(1, left / 1_000_000));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new StoreTimeoutException("interrupted while waiting for keys " + keys);
            }
        }
    }
}
