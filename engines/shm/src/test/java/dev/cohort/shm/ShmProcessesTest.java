package dev.cohort.shm;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.runtime.SharedMemoryFiles;
import dev.cohort.testkit.JvmWorkers;
import dev.cohort.testkit.JvmWorkers.Result;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The conformance suite on shm with one JVM per rank, rendezvous through the environment. */
class ShmProcessesTest {

    /** The JVM flag the engine needs, as the worker JVMs get it. */
    static final List<String> JVM_ARGS = List.of("--add-modules", "jdk.incubator.vector");

    @TempDir
    Path tmp;

    static Map<String, String> env(String runId, int rank, int world, int port) {
        Map<String, String> env = new HashMap<>(ShmThreadsTest.env(runId, rank, world, world));
        env.put("MASTER_ADDR", "127.0.0.1");
        env.put("MASTER_PORT", Integer.toString(port));
        return env;
    }

    /** The mapping files of {@code runId} still in /dev/shm. */
    static List<Path> leftovers(String runId) {
        return SharedMemoryFiles.leftovers(runId);
    }

    static String runId(String what) {
        return what + "-" + ProcessHandle.current().pid() + "-" + System.nanoTime() % 100_000;
    }

    static List<Result> run(String mode, String runId, int world, Path logs, Duration deadline) {
        return run(JVM_ARGS, mode, runId, world, logs, deadline);
    }

    static List<Result> run(List<String> jvmArgs, String mode, String runId, int world, Path logs, Duration deadline) {
        int port = JvmWorkers.freePort();
        return JvmWorkers.run(
                world,
                r -> JvmWorkers.javaCommand(ShmWorker.class, jvmArgs, List.of(mode)),
                r -> env(runId, r, world, port),
                logs,
                deadline);
    }

    static void assertAllOk(List<Result> results) {
        JvmWorkers.assertAllOk(results);
    }

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void twoJobsWithTheSameRunIdOnOneHostDoNotCollide() throws Exception {
        String run = runId("twojobs");
        CompletableFuture<List<Result>> a = CompletableFuture.supplyAsync(
                () -> run("conformance-small", run, 2, tmp.resolve("a"), Duration.ofSeconds(160)));
        CompletableFuture<List<Result>> b = CompletableFuture.supplyAsync(
                () -> run("conformance-small", run, 2, tmp.resolve("b"), Duration.ofSeconds(160)));
        assertAllOk(a.get(170, TimeUnit.SECONDS));
        assertAllOk(b.get(170, TimeUnit.SECONDS));
        assertThat(leftovers(run)).isEmpty();
    }

    /**
     * A JVM started without the Vector API's module (as under torchrun, srun or plain {@code java})
     * runs the engine: its float32 sums take the plain loops, with the same results.
     */
    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void runsWithoutTheVectorApiModule() {
        String run = runId("novector");
        assertAllOk(run(List.of(), "conformance-small", run, 2, tmp, Duration.ofSeconds(100)));
        assertThat(leftovers(run)).isEmpty();
    }
}
