package dev.cohort.launcher;

import dev.cohort.api.ProgressReporter;
import dev.cohort.api.ProgressReporter.Finished;
import dev.cohort.api.ProgressReporter.Marker;
import dev.cohort.api.ProgressReporter.Update;
import dev.cohort.runtime.Daemons;
import dev.cohort.runtime.JdkNeed;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.Writer;
import java.nio.charset.Charset;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * Copies one stream of one worker, line by line, to the {@link Console} (prefixed with the rank)
 * and to the worker's log file, and keeps the worker's last lines for the failure report. One
 * daemon thread per stream; both streams of a worker share one {@link LastLines}.
 *
 * <p>Progress markers ({@link ProgressReporter}) are taken out: they go to the console as progress,
 * to the log as a plain line at most every {@link ProgressReporter#PLAIN_INTERVAL_MILLIS} ms, and
 * not into the last lines. When a stream that carried progress ends, its progress ends too.
 */
final class OutputPump {

    private final Thread thread;

    private OutputPump(Thread thread) {
        this.thread = thread;
    }

    static OutputPump start(InputStream in, int rank, boolean stderr, Console console, Writer log, LastLines last) {
        Runnable copy = () -> {
            ProgressToLog progress = new ProgressToLog(log);
            try (BufferedReader reader = new BufferedReader(new InputStreamReader(in, Charset.defaultCharset()))) {
                int read = 0;
                for (String line = reader.readLine(); line != null; line = reader.readLine()) {
                    if (stderr && ++read <= JdkNeed.NOTICE_LINES && JdkNeed.INCUBATOR_NOTICE.equals(line)) {
                        continue; // after the JVM's other notices, e.g. "Picked up JAVA_TOOL_OPTIONS"
                    }
                    if (Marker.isMarker(line)) {
                        Optional<Marker> marker = Marker.parse(line);
                        marker.ifPresent(m -> console.progress(rank, m));
                        marker.ifPresent(progress::add);
                        continue;
                    }
                    console.workerLine(rank, stderr, line);
                    last.add(line);
                    if (log != null) {
                        writeLog(log, line);
                    }
                }
            } catch (IOException e) {
                // The worker's pipe closed under us (worker killed): nothing more to copy.
            }
            if (progress.seen) {
                console.progress(rank, new Finished());
            }
        };
        Thread t = Daemons.thread("cohort-output-rank" + rank + (stderr ? "-err" : "-out"), copy);
        t.start();
        return new OutputPump(t);
    }

    /** mpirun's {@code --tag-output} prefix: {@code [job,rank]<stdout>:} or {@code <stderr>:}. */
    private static final java.util.regex.Pattern MPI_TAG =
            java.util.regex.Pattern.compile("^\\[\\d+,(\\d+)\\]<(stdout|stderr)>:(.*)$");

    private static final java.util.regex.Pattern MPI_TAG_INSIDE =
            java.util.regex.Pattern.compile("\\[\\d+,\\d+\\]<(stdout|stderr)>:");

    /**
     * Copies one stream of {@code mpirun --tag-output}, which carries every rank's lines, each to
     * its rank as {@link #start} does; {@code untagged} gets mpirun's own lines.
     */
    static OutputPump startTagged(
            InputStream in,
            boolean stderr,
            Console console,
            Writer[] logs,
            LastLines[] last,
            java.util.function.Consumer<String> untagged) {
        Runnable copy = () -> {
            ProgressToLog[] progress = new ProgressToLog[logs.length];
            for (int r = 0; r < logs.length; r++) {
                progress[r] = new ProgressToLog(logs[r]);
            }
            try (BufferedReader reader = new BufferedReader(new InputStreamReader(in, Charset.defaultCharset()))) {
                for (String line = reader.readLine(); line != null; line = reader.readLine()) {
                    java.util.regex.Matcher m = MPI_TAG.matcher(line);
                    int rank = m.matches() ? Integer.parseInt(m.group(1)) : -1;
                    if (rank < 0 || rank >= logs.length) {
                        untagged.accept(line);
                        continue;
                    }
                    // mpirun tags every write, and a line written in pieces carries tags inside it.
                    String text = MPI_TAG_INSIDE.matcher(m.group(3)).replaceAll("");
                    boolean toErr = m.group(2).equals("stderr");
                    if (toErr && JdkNeed.INCUBATOR_NOTICE.equals(text)) {
                        continue;
                    }
                    if (Marker.isMarker(text)) {
                        Optional<Marker> marker = Marker.parse(text);
                        int r = rank;
                        marker.ifPresent(mk -> console.progress(r, mk));
                        marker.ifPresent(progress[rank]::add);
                        continue;
                    }
                    console.workerLine(rank, toErr, text);
                    last[rank].add(text);
                    if (logs[rank] != null) {
                        writeLog(logs[rank], text);
                    }
                }
            } catch (IOException e) {
                // mpirun's pipe closed under us (killed): nothing more to copy.
            }
            for (int r = 0; r < logs.length; r++) {
                if (progress[r].seen) {
                    console.progress(r, new Finished());
                }
            }
        };
        Thread t = Daemons.thread("cohort-output-mpirun" + (stderr ? "-err" : "-out"), copy);
        t.start();
        return new OutputPump(t);
    }

    private static void writeLog(Writer log, String line) {
        synchronized (log) {
            try {
                log.write(line);
                log.write('\n');
                log.flush();
            } catch (IOException e) {
                // A full disk must not stop the worker's console output.
            }
        }
    }

    /** A stream's progress in its log: plain lines, throttled. */
    private static final class ProgressToLog {
        private final Writer log;
        private final long intervalNanos = TimeUnit.MILLISECONDS.toNanos(ProgressReporter.PLAIN_INTERVAL_MILLIS);
        private boolean seen;
        private boolean logged;
        private long lastLogged;

        ProgressToLog(Writer log) {
            this.log = log;
        }

        void add(Marker marker) {
            seen = true;
            long now = System.nanoTime();
            if (log != null && marker instanceof Update update && (!logged || now - lastLogged >= intervalNanos)) {
                logged = true;
                lastLogged = now;
                writeLog(log, update.describe());
            }
        }
    }

    /** Waits until the worker's stream is drained (its end of the pipe closed), at most {@code millis}. */
    void await(long millis) {
        try {
            thread.join(Math.max(1, millis));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static long millisLeft(long deadlineNanos) {
        return TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime());
    }

    /** The last {@code capacity} lines a worker printed on either stream. */
    static final class LastLines {
        private final int capacity;
        private final Deque<String> lines = new ArrayDeque<>();

        LastLines(int capacity) {
            this.capacity = capacity;
        }

        synchronized void add(String line) {
            if (lines.size() == capacity) {
                lines.removeFirst();
            }
            lines.addLast(line);
        }

        synchronized List<String> snapshot() {
            return new ArrayList<>(lines);
        }
    }
}
