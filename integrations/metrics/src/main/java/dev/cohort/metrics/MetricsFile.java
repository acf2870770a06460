package dev.cohort.metrics;

import dev.cohort.api.LaunchEnvironment;
import dev.cohort.api.Topology;
import dev.cohort.api.steps.TrainingSteps;
import dev.cohort.runtime.AbstractProcessGroup;
import dev.cohort.runtime.JobObserver;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.Map;

/**
 * Writes one JSON line per training step of rank 0 to the file {@value #ENV_FILE} names ({@code
 * cohort run --metrics-file F} sets it): when it ended, its number, its time and the time of each
 * part, its examples and samples/s, and the run's restarts. Lines are appended and flushed as the
 * steps end, so a run the launcher restarts goes on in the same file and {@code tail -f} follows it.
 * Without the variable it does nothing.
 */
public final class MetricsFile implements JobObserver {

    /** The file rank 0 appends a line to after each step; unset: none. */
    public static final String ENV_FILE = "COHORT_METRICS_FILE";

    /** One line of the file; times in seconds; its JSON names are the fields' in snake case. */
    public record Line(
            String time,
            int rank,
            long step,
            double stepS,
            long samples,
            double samplesPerS,
            double dataWaitS,
            double computingS,
            double forwardS,
            double backwardS,
            double averagingS,
            double optimizerS,
            int restarts) {

        static Line of(TrainingSteps.Step s, int restarts) {
            return new Line(
                    Instant.now().toString(),
                    s.rank(),
                    s.number(),
                    s.nanos() / 1e9,
                    s.samples(),
                    s.samplesPerSecond(),
                    s.dataNanos() / 1e9,
                    s.computeNanos() / 1e9,
                    s.forwardNanos() / 1e9,
                    s.backwardNanos() / 1e9,
                    s.averageNanos() / 1e9,
                    s.optimizerNanos() / 1e9,
                    restarts);
        }

        /**
         * This line as JSON, written here rather than by a JSON library: the workers' class path
         * (a user's program's) is left without one.
         */
        String toJson() {
            return "{\"time\":\"" + time + "\",\"rank\":" + rank + ",\"step\":" + step + ",\"step_s\":" + stepS
                    + ",\"samples\":" + samples + ",\"samples_per_s\":" + samplesPerS + ",\"data_wait_s\":" + dataWaitS
                    + ",\"computing_s\":" + computingS + ",\"forward_s\":" + forwardS + ",\"backward_s\":" + backwardS
                    + ",\"averaging_s\":" + averagingS + ",\"optimizer_s\":" + optimizerS + ",\"restarts\":" + restarts
                    + "}";
        }
    }

    private static final System.Logger LOG = System.getLogger(MetricsFile.class.getName());

    @Override
    public AutoCloseable joined(AbstractProcessGroup world, Topology topology, Map<String, String> env) {
        String named = env.get(ENV_FILE);
        if (named == null || named.isBlank() || topology.rank() != 0) {
            return () -> {};
        }
        Path file = Path.of(named.trim());
        int restarts = LaunchEnvironment.parseRestartCount(env);
        Writer out;
        try {
            if (file.getParent() != null) {
                Files.createDirectories(file.getParent());
            }
            out = Files.newBufferedWriter(
                    file, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new IllegalArgumentException(
                    ENV_FILE + "=" + named + ": rank 0 cannot write its step metrics there (" + e + ")", e);
        }
        boolean[] failed = {false};
        AutoCloseable observing = TrainingSteps.observe(s -> {
            if (s.rank() == 0 && !failed[0]) {
                failed[0] = !write(out, Line.of(s, restarts), file);
            }
        });
        return () -> {
            observing.close();
            synchronized (out) {
                out.close();
            }
        };
    }

    /** Appends {@code line}; false, said once in the log, when the file cannot take it (training goes on). */
    private static boolean write(Writer out, Line line, Path file) {
        try {
            String json = line.toJson();
            synchronized (out) {
                out.write(json);
                out.write('\n');
                out.flush();
            }
            return true;
        } catch (IOException e) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "cannot append to the step metrics file " + file + " (" + e + "); no more lines are written to it");
            return false;
        }
    }

    /** The lines of {@code file}, in order (with Jackson, which the reader's class path must have). */
    public static java.util.List<Line> read(Path file) throws IOException {
        return Reading.lines(file);
    }

    /** Jackson, loaded only to read a file back: writing one needs no JSON library. */
    private static final class Reading {
        static final com.fasterxml.jackson.databind.ObjectMapper JSON =
                new com.fasterxml.jackson.databind.ObjectMapper()
                        .setPropertyNamingStrategy(com.fasterxml.jackson.databind.PropertyNamingStrategies.SNAKE_CASE);

        static java.util.List<Line> lines(Path file) throws IOException {
            try (var lines = Files.lines(file)) {
                return lines.filter(l -> !l.isBlank())
                        .map(l -> {
                            try {
                                return JSON.readValue(l, Line.class);
                            } catch (IOException e) {
                                throw new UncheckedIOException(file + ": not a line of step metrics: " + l, e);
                            }
                        })
                        .toList();
            }
        }
    }
}
