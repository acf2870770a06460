package dev.cohort.torch;

import dev.cohort.api.Backends;
import dev.cohort.api.DistributedBackend;
import dev.cohort.testkit.JvmWorkers;
import dev.cohort.testkit.JvmWorkers.Result;
import dev.cohort.testkit.WorkerProcess;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntFunction;
import org.bytedeco.pytorch.global.torch;

/** Runs a worker class as one JVM process per rank on this host: the process-engine twin of {@link ThreadRanks}. */
final class ProcessRanks {

    private ProcessRanks() {}

    /** Whether the shm engine can run here: JDK 22+ and the jdk22-plus profile put it on the test class path. */
    static boolean shmAvailable() {
        return Runtime.version().feature() >= 22 && EquivalenceTest.isOnClassPath("dev.cohort.shm.ShmBackend");
    }

    /** The engines a process test visits here: gloo, and shm where {@link #shmAvailable()}. */
    static List<String> glooAndShm() {
        return shmAvailable() ? List.of("gloo", "shm") : List.of("gloo");
    }

    /**
     * Runs {@code main} with {@code args} on {@code world} ranks of one run ({@code runId}), each
     * rank's output in {@code logs}, all within {@code limit}.
     */
    static List<Result> run(int world, Class<?> main, List<String> args, String runId, Path logs, Duration limit) {
        return run(world, main, args, runId, logs, limit, r -> Map.of());
    }

    /** As above, with {@code extraEnv.apply(rank)} added to each rank's environment. */
    static List<Result> run(
            int world,
            Class<?> main,
            List<String> args,
            String runId,
            Path logs,
            Duration limit,
            IntFunction<Map<String, String>> extraEnv) {
        return run(world, main, List.of(), args, runId, logs, limit, extraEnv);
    }

    /** As above, each rank's JVM with {@code jvmOptions} too (e.g. the JIT's every tier, for a test of speed). */
    static List<Result> run(
            int world,
            Class<?> main,
            List<String> jvmOptions,
            List<String> args,
            String runId,
            Path logs,
            Duration limit,
            IntFunction<Map<String, String>> extraEnv) {
        List<String> options = new java.util.ArrayList<>(
                List.of("--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED"));
        options.addAll(jvmOptions);
        int port = JvmWorkers.freePort();
        String run = runId + "-" + ProcessHandle.current().pid();
        return JvmWorkers.run(
                world,
                r -> JvmWorkers.javaCommand(main, options, args),
                r -> {
                    Map<String, String> env = new HashMap<>(extraEnv.apply(r));
                    env.put("MASTER_ADDR", "127.0.0.1");
                    env.put("MASTER_PORT", Integer.toString(port));
                    env.put("RANK", Integer.toString(r));
                    env.put("WORLD_SIZE", Integer.toString(world));
                    env.put("COHORT_RUN_ID", run);
                    return env;
                },
                logs,
                limit);
    }

    /** Asserts that every rank's process exited 0, showing every rank's output where one did not. */
    static void assertAllExitedZero(List<Result> results) {
        for (Result r : results) {
            org.assertj.core.api.Assertions.assertThat(r.exitCode())
                    .as(JvmWorkers.describe(results))
                    .isZero();
        }
    }

    /** What a worker process does on its rank. */
    interface RankBody {
        void run(DistributedBackend backend) throws Exception;
    }

    /**
     * A worker's {@code main}: joins {@code engine}'s group as this process's rank, with one torch
     * thread, runs {@code body}, then waits at a barrier so that no rank leaves while others still
     * talk to it.
     */
    static void asRank(String engine, RankBody body) {
        WorkerProcess.main(() -> {
            try (DistributedBackend backend = Backends.select(engine)) {
                backend.initialize();
                torch.set_num_threads(1);
                body.run(backend);
                backend.barrier();
            }
        });
    }
}
