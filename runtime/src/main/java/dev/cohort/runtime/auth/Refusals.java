package dev.cohort.runtime.auth;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * The log of one listener's refused connections: the first few are logged with their address and
 * reason, the rest counted, so a flood cannot flood the log.
 */
public final class Refusals {

    private static final System.Logger LOG = System.getLogger(Refusals.class.getName());
    private static final int REPORTED = 3;

    private final String listener;
    private final AtomicInteger count = new AtomicInteger();

    /** For the listener {@code listener} ("rank 0 of 4: job store on 10.0.0.1:29500"). */
    public Refusals(String listener) {
        this.listener = listener;
    }

    /** Logs (or counts) a refused connection from {@code from}, because {@code why}. */
    public void refused(Object from, String why) {
        int n = count.incrementAndGet();
        if (n <= REPORTED) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    listener + ": refused a connection from " + from + ": " + why
                            + (n == REPORTED ? "; further refusals are counted silently" : ""));
        }
    }

    /** How many connections were refused so far. */
    public int count() {
        return count.get();
    }
}
