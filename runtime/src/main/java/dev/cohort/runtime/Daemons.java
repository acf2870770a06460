package dev.cohort.runtime;

import java.util.concurrent.ThreadFactory;

/** Cohort's background threads: daemons (they never keep a JVM alive), each with a name that says what it does. */
public final class Daemons {

    private Daemons() {}

    /** A daemon thread called {@code name} that runs {@code body}, not yet started. */
    public static Thread thread(String name, Runnable body) {
        Thread t = new Thread(body, name);
        t.setDaemon(true);
        return t;
    }

    /** Starts {@link #thread}{@code (name, body)} and returns it. */
    public static Thread start(String name, Runnable body) {
        Thread t = thread(name, body);
        t.start();
        return t;
    }

    /** A factory of daemon threads all called {@code name}, for a single-thread executor. */
    public static ThreadFactory named(String name) {
        return body -> thread(name, body);
    }
}
