package dev.cohort.api;

import java.io.PrintStream;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * How far a long task has got (an epoch of training steps, say), for the person watching. Report
 * it from the root worker only:
 *
 * <pre>{@code
 * try (ProgressReporter progress = backend.isRootWorker() ? ProgressReporter.standard() : ProgressReporter.silent()) {
 *     for (int epoch = 0; epoch < epochs; epoch++) {
 *         progress.start("epoch " + (epoch + 1) + "/" + epochs, steps, "steps");
 *         for (int step = 0; step < steps; step++) {
 *             double loss = trainOneStep();
 *             progress.update(step + 1, () -> String.format("loss %.4f", loss));
 *         }
 *         progress.finish();
 *         System.out.println("epoch " + (epoch + 1) + " done");
 *     }
 * }
 * }</pre>
 *
 * <p>Under {@code cohort run}, which sets {@value #ENV}={@value #LAUNCHER} for its workers, each
 * report is a marker line on the worker's stdout (at most one per {@link #MARKER_INTERVAL_MILLIS}
 * ms, plus the first and the last of each task), which the launcher takes out of the output: it
 * shows global rank 0's as one live line below the other output on a terminal, as a plain line
 * every few seconds anywhere else, and drops the other ranks'. Run any other way, the reporter
 * writes a plain line at most every {@link #PLAIN_INTERVAL_MILLIS} ms (the first of each task at
 * once). Progress is transient: print what should stay (an epoch's result) as an ordinary line,
 * after {@link #finish()}.
 *
 * <p>Cheap on every step: between lines an update reads the clock and nothing else; the text
 * supplier is called only for a line. Thread-safe.
 */
public final class ProgressReporter implements AutoCloseable {

    /** The variable the launcher sets for its workers, to {@value #LAUNCHER}: it renders the markers. */
    public static final String ENV = "COHORT_PROGRESS";
    /** {@value #ENV}'s value under the launcher. */
    public static final String LAUNCHER = "launcher";
    /** The least time between two marker lines of one task. */
    public static final long MARKER_INTERVAL_MILLIS = 200;
    /** The least time between two plain progress lines (here, and in the launcher's plain output). */
    public static final long PLAIN_INTERVAL_MILLIS = 5000;

    private final PrintStream out;
    private final boolean markers;
    private final long intervalNanos;
    private String task;
    private long total;
    private String unit;
    private boolean firstOfTask;
    private long lastLine;

    private ProgressReporter(PrintStream out, boolean markers) {
        this.out = out;
        this.markers = markers;
        this.intervalNanos = TimeUnit.MILLISECONDS.toNanos(markers ? MARKER_INTERVAL_MILLIS : PLAIN_INTERVAL_MILLIS);
    }

    /** To this process's stdout: markers under the launcher ({@value #ENV}), plain lines otherwise. */
    public static ProgressReporter standard() {
        return to(System.out, System.getenv());
    }

    /** To {@code out}: markers when {@code env} says the launcher reads them ({@value #ENV}), plain lines otherwise. */
    public static ProgressReporter to(PrintStream out, Map<String, String> env) {
        return new ProgressReporter(Objects.requireNonNull(out, "out"), LAUNCHER.equals(env.get(ENV)));
    }

    /** Reports nothing: for the workers other than the root. */
    public static ProgressReporter silent() {
        return new ProgressReporter(null, false);
    }

    /**
     * A new task of {@code total} {@code unit}s starts (it ends the previous one).
     *
     * @param task  what is under way, e.g. {@code "epoch 2/5"}
     * @param total how many units the task has; 0 when unknown
     * @param unit  what is counted, e.g. {@code "steps"}
     */
    public synchronized void start(String task, long total, String unit) {
        if (total < 0) {
            throw new IllegalArgumentException("total must be >= 0, got " + total);
        }
        this.task = Objects.requireNonNull(task, "task");
        this.total = total;
        this.unit = Objects.requireNonNull(unit, "unit");
        this.firstOfTask = true;
    }

    /** {@code current} units of the task are done; {@code text} says more (a loss, a rate), may be empty. */
    public void update(long current, String text) {
        update(current, () -> text);
    }

    /** {@code current} units of the task are done; {@code text} is asked only when a line is written. */
    public synchronized void update(long current, Supplier<String> text) {
        if (out == null) {
            return;
        }
        if (task == null) {
            throw new IllegalStateException("update before start: start(task, total, unit) first");
        }
        long now = System.nanoTime();
        boolean last = markers && total > 0 && current >= total;
        if (!firstOfTask && !last && now - lastLine < intervalNanos) {
            return;
        }
        firstOfTask = false;
        lastLine = now;
        Update update = new Update(task, current, total, unit, Objects.requireNonNullElse(text.get(), ""));
        out.print((markers ? update.line() : update.describe()) + "\n");
        out.flush();
    }

    /** The task ended: the launcher removes its live line. */
    public synchronized void finish() {
        if (out != null && task != null && markers) {
            out.print(Finished.LINE + "\n");
            out.flush();
        }
        task = null;
    }

    /** {@link #finish()}. */
    @Override
    public void close() {
        finish();
    }

    /** What a marker line says. */
    public sealed interface Marker permits Update, Finished {

        /** Every marker line starts with this. */
        String PREFIX = "@cohort-progress\t";

        /** Whether {@code line} is a marker (well formed or not): never show it as output. */
        static boolean isMarker(String line) {
            return line.startsWith(PREFIX);
        }

        /** The marker {@code line} carries; empty when it is no marker or a malformed one. */
        static Optional<Marker> parse(String line) {
            if (!isMarker(line)) {
                return Optional.empty();
            }
            String[] f = line.substring(PREFIX.length()).split("\t", -1);
            if (f.length == 1 && f[0].equals(Finished.KIND)) {
                return Optional.of(new Finished());
            }
            if (f.length != 6 || !f[0].equals(Update.KIND)) {
                return Optional.empty();
            }
            try {
                long current = Long.parseLong(f[1]);
                long total = Long.parseLong(f[2]);
                return current < 0 || total < 0
                        ? Optional.empty()
                        : Optional.of(new Update(f[4], current, total, f[3], f[5]));
            } catch (NumberFormatException e) {
                return Optional.empty();
            }
        }
    }

    /**
     * One report: {@code current} of {@code total} {@code unit}s of {@code task} done, and a free
     * {@code text}. Tabs and line breaks in the words become spaces.
     *
     * @param total 0 when unknown
     */
    public record Update(String task, long current, long total, String unit, String text) implements Marker {

        static final String KIND = "update";

        /** Normalizes the words to one line without tabs. */
        public Update {
            task = oneLine(task);
            unit = oneLine(unit);
            text = oneLine(text);
        }

        /** The marker line (without its line break). */
        public String line() {
            return PREFIX + KIND + "\t" + current + "\t" + total + "\t" + unit + "\t" + task + "\t" + text;
        }

        /** For people: {@code epoch 1/4: 312/469 steps (66%), loss 0.4512}. */
        public String describe() {
            String done = total > 0
                    ? String.format(
                            Locale.ROOT,
                            "%d/%d %s (%.0f%%)",
                            current,
                            total,
                            unit,
                            Math.floor(Math.min(100.0, 100.0 * current / total)))
                    : current + " " + unit;
            return task + ": " + done + (text.isEmpty() ? "" : ", " + text);
        }

        private static String oneLine(String s) {
            return Objects.requireNonNull(s)
                    .replace('\t', ' ')
                    .replace('\n', ' ')
                    .replace('\r', ' ');
        }
    }

    /** The task ended. */
    public record Finished() implements Marker {

        static final String KIND = "finish";
        static final String LINE = PREFIX + KIND;
    }
}
