package dev.cohort.djl;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.testkit.JvmWorkers;
import dev.cohort.testkit.JvmWorkers.Result;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/** Runs {@link DjlWorker} jobs on the tcp engine (or {@code COHORT_BACKEND}'s), one JVM per rank, and reads what their root wrote. */
final class DjlRuns {

    private static final AtomicInteger RUNS = new AtomicInteger();

    private DjlRuns() {}

    /**
     * The root's parameters after {@code world} ranks of {@link DjlWorker} ran {@code mode} with
     * batch {@code batch}, {@code steps} steps per epoch, {@code accumulation}, and the worker's
     * {@code KEY=VALUE} options; every rank must print OK.
     */
    static float[] train(Path tmp, int world, String mode, int batch, int steps, int accumulation, String... options) {
        return read(run(tmp, world, mode, batch, steps, accumulation, options).params());
    }

    record Run(Path params, List<Result> results) {}

    static Run run(Path tmp, int world, String mode, int batch, int steps, int accumulation, String... options) {
        return ok(start(tmp, Map.of(), world, mode, batch, steps, accumulation, options));
    }

    /** {@code run}, once every rank printed OK. */
    static Run ok(Run run) {
        JvmWorkers.assertAllOk(run.results());
        return run;
    }

    /** The engines the equivalence tests train on: tcp, and shm on JDK 22 or newer (which it needs). */
    static List<Map<String, String>> engines() {
        return Runtime.version().feature() >= 22
                ? List.of(Map.of("COHORT_BACKEND", "tcp"), Map.of("COHORT_BACKEND", "shm"))
                : List.of(Map.of("COHORT_BACKEND", "tcp"));
    }

    /** As {@link #run}, whatever the ranks' exit codes. */
    static Run start(Path tmp, int world, String mode, int batch, int steps, int accumulation, String... options) {
        return start(tmp, Map.of(), world, mode, batch, steps, accumulation, options);
    }

    /** As {@link #start(Path, int, String, int, int, int, String...)}, with {@code env} added to every rank's environment. */
    static Run start(
            Path tmp,
            Map<String, String> env,
            int world,
            String mode,
            int batch,
            int steps,
            int accumulation,
            String... options) {
        int id = RUNS.incrementAndGet();
        Path out = tmp.resolve("params-" + id + ".txt");
        List<String> args = new ArrayList<>(List.of(
                mode,
                Integer.toString(batch),
                Integer.toString(steps),
                Integer.toString(accumulation),
                out.toString()));
        args.addAll(List.of(options));
        return new Run(out, processes(tmp, env, world, DjlWorker.class, args, id));
    }

    /** A fresh run id, for {@link #processes}. */
    static int nextId() {
        return RUNS.incrementAndGet();
    }

    /**
     * {@code world} JVMs running {@code main} with {@code args}, ranks of one tcp job (run id
     * {@code djl-<id>}), with {@code env} added to every rank's environment; whatever their exit codes.
     */
    static List<Result> processes(
            Path tmp, Map<String, String> env, int world, Class<?> main, List<String> args, int id) {
        int port = JvmWorkers.freePort();
        return JvmWorkers.run(
                world,
                r -> JvmWorkers.javaCommand(main, List.of("-Dai.djl.offline=true"), args),
                r -> {
                    Map<String, String> vars = new java.util.HashMap<>(env);
                    vars.putAll(Map.of(
                            "MASTER_ADDR",
                            "127.0.0.1",
                            "MASTER_PORT",
                            Integer.toString(port),
                            "RANK",
                            Integer.toString(r),
                            "WORLD_SIZE",
                            Integer.toString(world),
                            "COHORT_RUN_ID",
                            "djl-" + id));
                    return vars;
                },
                tmp.resolve("logs-" + id),
                Duration.ofSeconds(150));
    }

    /** The parameter values a {@link DjlWorker} root wrote, one per line. */
    static float[] read(Path file) {
        try {
            List<String> lines = Files.readAllLines(file);
            float[] values = new float[lines.size()];
            for (int i = 0; i < values.length; i++) {
                values[i] = Float.parseFloat(lines.get(i));
            }
            return values;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Equal within 1e-5 relative (1e-6 absolute near zero). */
    static void assertClose(float[] actual, float[] expected) {
        assertThat(actual).hasSameSizeAs(expected);
        for (int i = 0; i < expected.length; i++) {
            float tolerance = Math.max(1e-5f * Math.abs(expected[i]), 1e-6f);
            assertThat(actual[i])
                    .as("parameter value %d", i)
                    .isCloseTo(expected[i], org.assertj.core.data.Offset.offset(tolerance));
        }
    }
}
