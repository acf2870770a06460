package dev.cohort.examples;

import java.io.PrintStream;
import java.lang.reflect.Method;
import java.util.Locale;
import me.tongfei.progressbar.ConsoleProgressBarConsumer;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;

/**
 * The root worker's progress display: step, loss and samples/s.
 *
 * <p>On a terminal it is a progress bar that redraws itself in place. Anywhere else (a log file, a
 * pipe, or under {@code ./cohort run}, which prefixes every line with the rank) a bar drawn with
 * carriage returns would garble the output, so it prints one compact line at most every
 * {@link #LINE_INTERVAL_NANOS} and one at the end of each epoch.
 */
public abstract class Progress implements AutoCloseable {

    /** The least time between two progress lines when not on a terminal. */
    static final long LINE_INTERVAL_NANOS = 2_000_000_000L;

    /** A new epoch of {@code batches} batches starts at batch {@code firstBatch}. */
    public abstract void startEpoch(int epoch, int epochs, int batches, int firstBatch);

    /** Batch {@code batchInEpoch} (0-based) finished with this loss; the rate is over all workers. */
    public abstract void step(int batchInEpoch, double loss, double samplesPerSecond);

    /** The current epoch ended (or stopped early); {@code message} is printed as a line of its own. */
    public abstract void endEpoch(String message);

    @Override
    public void close() {
    }

    /** A bar when {@code out} is this process's stdout on an interactive terminal, lines otherwise. */
    public static Progress forOutput(PrintStream out) {
        return out == System.out && stdoutIsTerminal() ? new Bar(out) : new Lines(out);
    }

    /** Prints nothing: for the workers other than the root. */
    public static Progress silent() {
        return new Progress() {
            @Override
            public void startEpoch(int epoch, int epochs, int batches, int firstBatch) {
            }

            @Override
            public void step(int batchInEpoch, double loss, double samplesPerSecond) {
            }

            @Override
            public void endEpoch(String message) {
            }
        };
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

    static String status(int epoch, int epochs, int batch, int batches, double loss, double samplesPerSecond) {
        return String.format(Locale.ROOT, "epoch %d/%d  step %d/%d  loss %.4f  %.0f samples/s", epoch + 1, epochs,
                batch, batches, loss, samplesPerSecond);
    }

    /** Compact lines, throttled. */
    static final class Lines extends Progress {
        private final PrintStream out;
        private int epoch;
        private int epochs;
        private int batches;
        private long lastLine;
        private String pending;

        Lines(PrintStream out) {
            this.out = out;
        }

        @Override
        public void startEpoch(int epoch, int epochs, int batches, int firstBatch) {
            this.epoch = epoch;
            this.epochs = epochs;
            this.batches = batches;
            this.lastLine = System.nanoTime();
            this.pending = null;
            out.printf(Locale.ROOT, "epoch %d/%d: %d steps%s%n", epoch + 1, epochs, batches,
                    firstBatch > 0 ? " (resuming at step " + (firstBatch + 1) + ")" : "");
        }

        @Override
        public void step(int batchInEpoch, double loss, double samplesPerSecond) {
            pending = status(epoch, epochs, batchInEpoch + 1, batches, loss, samplesPerSecond);
            long now = System.nanoTime();
            if (now - lastLine >= LINE_INTERVAL_NANOS) {
                out.println(pending);
                pending = null;
                lastLine = now;
            }
        }

        @Override
        public void endEpoch(String message) {
            if (pending != null) {
                out.println(pending);
                pending = null;
            }
            out.println(message);
            out.flush();
        }
    }

    /** An in-place bar (me.tongfei:progressbar). */
    static final class Bar extends Progress {
        private final PrintStream out;
        private ProgressBar bar;

        Bar(PrintStream out) {
            this.out = out;
        }

        @Override
        public void startEpoch(int epoch, int epochs, int batches, int firstBatch) {
            closeBar();
            bar = new ProgressBarBuilder()
                    .setTaskName(String.format(Locale.ROOT, "epoch %d/%d", epoch + 1, epochs))
                    .setInitialMax(batches)
                    .startsFrom(firstBatch, java.time.Duration.ZERO)
                    .setStyle(ProgressBarStyle.ASCII)
                    .setUpdateIntervalMillis(200)
                    .continuousUpdate()
                    .setConsumer(new ConsoleProgressBarConsumer(out))
                    .build();
        }

        @Override
        public void step(int batchInEpoch, double loss, double samplesPerSecond) {
            if (bar != null) {
                bar.stepTo(batchInEpoch + 1);
                bar.setExtraMessage(String.format(Locale.ROOT, " loss %.4f  %.0f samples/s", loss, samplesPerSecond));
            }
        }

        @Override
        public void endEpoch(String message) {
            closeBar();
            out.println(message);
            out.flush();
        }

        @Override
        public void close() {
            closeBar();
        }

        private void closeBar() {
            if (bar != null) {
                bar.close();
                bar = null;
            }
        }
    }
}
