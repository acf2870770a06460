package dev.cohort.launcher;

import java.io.PrintStream;
import java.util.Objects;

/**
 * Where workers' lines and the launcher's own messages go. Every line is written and flushed
 * whole under one lock shared by both streams, so lines of different workers never interleave
 * mid-line, not even when stdout and stderr are the same terminal.
 */
public final class Console {

    private final PrintStream out;
    private final PrintStream err;
    private final Object lock = new Object();

    public Console(PrintStream out, PrintStream err) {
        this.out = Objects.requireNonNull(out, "out");
        this.err = Objects.requireNonNull(err, "err");
    }

    /** The launcher's process streams. */
    public static Console system() {
        return new Console(System.out, System.err);
    }

    /** A worker's line, as {@code [rank R] line}, to stdout or stderr like the worker wrote it. */
    public void workerLine(int rank, boolean stderr, String line) {
        PrintStream target = stderr ? err : out;
        synchronized (lock) {
            target.print("[rank " + rank + "] " + line + "\n");
            target.flush();
        }
    }

    /** A message of the launcher itself, as {@code cohort: message}, to stderr. */
    public void message(String message) {
        synchronized (lock) {
            err.print("cohort: " + message + "\n");
            err.flush();
        }
    }
}
