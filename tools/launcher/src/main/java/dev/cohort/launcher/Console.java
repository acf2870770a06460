package dev.cohort.launcher;

import dev.cohort.api.ProgressReporter;
import dev.cohort.api.ProgressReporter.Marker;
import dev.cohort.api.ProgressReporter.Update;
import java.io.PrintStream;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;
import java.util.function.LongSupplier;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarConsumer;
import me.tongfei.progressbar.ProgressBarStyle;

/**
 * Where workers' lines, their progress and the launcher's own messages go. Every line is written
 * and flushed whole under one lock shared by both streams, so lines of different workers never
 * interleave mid-line, not even when stdout and stderr are the same terminal.
 *
 * <p>Progress ({@link ProgressReporter}'s markers) is shown for global rank 0 only. On a terminal
 * it is one live line at the bottom of stdout, a bar drawn by me.tongfei:progressbar that redraws
 * itself a few times a second; every other line is written above it (the live line is erased, the
 * line written, the live line drawn again). Anywhere else (a pipe, a log, CI) it is a plain line
 * {@code [rank 0] epoch 1/4: 312/469 steps (66%), loss 0.45} at most every
 * {@link ProgressReporter#PLAIN_INTERVAL_MILLIS} ms.
 */
public final class Console {

    /** Back to the start of the line and erase it (ANSI: carriage return, erase to end of line). */
    private static final String ERASE_LINE = "\r\u001b[K";

    private static final int REDRAW_MILLIS = 200;

    private final PrintStream out;
    private final PrintStream err;
    private final boolean terminal;
    private final long plainIntervalNanos;
    private final IntSupplier columns;
    /** Nanoseconds, as {@link System#nanoTime()}; tests step it. */
    private final LongSupplier clock;

    private final Object lock = new Object();
    /** Under {@link #lock}: the live line shown at the bottom of the terminal, null when none. */
    private String live;
    /** Under {@link #lock}: when the last plain progress line was written, and whether there was one. */
    private long lastPlain;

    private boolean plainShown;

    /**
     * Guards the bar. Never taken with {@link #lock} held: closing a bar waits for its last
     * drawing, which takes {@link #lock} on progressbar's thread.
     */
    private final Object barLock = new Object();

    private ProgressBar bar;
    private LiveLine barLine;
    private String barTask;

    /** Plain output, as to a log or a pipe. */
    public Console(PrintStream out, PrintStream err) {
        this(out, err, false);
    }

    /** With a live progress line on {@code out} when {@code terminal}, plain progress lines otherwise. */
    public Console(PrintStream out, PrintStream err, boolean terminal) {
        this(out, err, terminal, ProgressReporter.PLAIN_INTERVAL_MILLIS, TerminalWidth::columns, System::nanoTime);
    }

    Console(
            PrintStream out,
            PrintStream err,
            boolean terminal,
            long plainIntervalMillis,
            IntSupplier columns,
            LongSupplier clock) {
        this.out = Objects.requireNonNull(out, "out");
        this.err = Objects.requireNonNull(err, "err");
        this.terminal = terminal;
        this.plainIntervalNanos = TimeUnit.MILLISECONDS.toNanos(plainIntervalMillis);
        this.columns = columns;
        this.clock = clock;
    }

    /** The launcher's process streams; a live progress line when stdout is an interactive terminal. */
    public static Console system() {
        return new Console(System.out, System.err, stdoutIsTerminal());
    }

    /** A worker's line, as {@code [rank R] line}, to stdout or stderr like the worker wrote it. */
    public void workerLine(int rank, boolean stderr, String line) {
        write(stderr ? err : out, "[rank " + rank + "] " + line);
    }

    /** A message of the launcher itself, as {@code cohort: message}, to stderr. */
    public void message(String message) {
        write(err, "cohort: " + message);
    }

    /** Progress that worker {@code rank} reported: shown for rank 0, ignored for the others. */
    public void progress(int rank, Marker marker) {
        if (rank != 0) {
            return;
        }
        if (!(marker instanceof Update update)) {
            closeBar();
        } else if (terminal) {
            showBar(update);
        } else {
            showPlain(update);
        }
    }

    private void write(PrintStream target, String line) {
        synchronized (lock) {
            if (live != null) {
                out.print(ERASE_LINE);
                out.flush();
            }
            target.print(line + "\n");
            target.flush();
            if (live != null) {
                out.print(live);
                out.flush();
            }
        }
    }

    private void showPlain(Update update) {
        synchronized (lock) {
            long now = clock.getAsLong();
            if (plainShown && now - lastPlain < plainIntervalNanos) {
                return;
            }
            plainShown = true;
            lastPlain = now;
        }
        write(out, "[rank 0] " + update.describe());
    }

    private void showBar(Update update) {
        synchronized (barLock) {
            if (bar != null && !update.task().equals(barTask)) {
                closeBar();
            }
            boolean fresh = bar == null;
            if (fresh) {
                barLine = new LiveLine();
                bar = new ProgressBarBuilder()
                        .setTaskName(update.task())
                        .setInitialMax(update.total() > 0 ? update.total() : -1)
                        .setUnit(" " + update.unit(), 1)
                        .startsFrom(update.current(), Duration.ZERO)
                        .setStyle(ProgressBarStyle.ASCII)
                        .setUpdateIntervalMillis(REDRAW_MILLIS)
                        .continuousUpdate()
                        .setConsumer(barLine)
                        .build();
                barTask = update.task();
            }
            bar.maxHint(update.total() > 0 ? update.total() : -1);
            bar.stepTo(update.current());
            bar.setExtraMessage(update.text());
            if (fresh) {
                bar.refresh(); // at once with the text: the bar's first drawing may have come before it
            }
        }
    }

    private void closeBar() {
        synchronized (barLock) {
            if (bar != null) {
                // Draws it once more and erases it; but a bar closed before its first scheduled
                // drawing only draws (progressbar 0.10.1), so the line is erased here too.
                bar.close();
                barLine.close();
                bar = null;
                barLine = null;
                barTask = null;
            }
        }
    }

    /** Where progressbar draws: the live line, kept below the other output. */
    private final class LiveLine implements ProgressBarConsumer {
        /** The terminal's width when the bar starts, one column kept free (at least 20). */
        private final int width = Math.max(20, columns.getAsInt() - 1);

        @Override
        public int getMaxRenderedLength() {
            return width;
        }

        @Override
        public void accept(String rendered) {
            synchronized (lock) {
                live = rendered;
                out.print(ERASE_LINE + rendered);
                out.flush();
            }
        }

        @Override
        public void close() {
            synchronized (lock) {
                if (live != null) {
                    out.print(ERASE_LINE);
                    out.flush();
                    live = null;
                }
            }
        }
    }

    // System.console() is null unless stdin and stdout are terminals up to JDK 21; from JDK 22 on
    // it may be non-null for redirected streams, and Console.isTerminal() tells. Reflection keeps
    // this compiling for --release 17.
    static boolean stdoutIsTerminal() {
        java.io.Console console = System.console();
        if (console == null) {
            return false;
        }
        try {
            Method isTerminal = java.io.Console.class.getMethod("isTerminal");
            return (Boolean) isTerminal.invoke(console);
        } catch (ReflectiveOperationException e) {
            return true;
        }
    }
}
