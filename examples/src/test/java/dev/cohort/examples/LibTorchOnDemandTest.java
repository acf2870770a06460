package dev.cohort.examples;

import dev.cohort.testkit.JvmWorkers;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Initializing a backend with the torch integration on the class path loads no libtorch, yet
 * leaves the program's first tensor safe to load it: two workers start at once on an empty
 * JavaCPP cache (where a first tensor that extracted the natives itself crashed a worker), each
 * initializes the tcp backend, finds no libtorch mapped, then makes a tensor ({@link TensorFirstWorker}).
 */
class LibTorchOnDemandTest {

    @TempDir
    Path dir;

    @Test
    @Timeout(value = 150, unit = TimeUnit.SECONDS)
    void aBackendLoadsNoLibtorchAndTheFirstTensorLoadsItFromAnEmptyCache() {
        int port = JvmWorkers.freePort();
        List<JvmWorkers.Result> results = JvmWorkers.run(
                2,
                r -> JvmWorkers.javaCommand(
                        TensorFirstWorker.class,
                        List.of("-Dorg.bytedeco.javacpp.cachedir=" + dir.resolve("javacpp-cache")),
                        List.of()),
                r -> RankEnvironment.of(
                        "127.0.0.1", port, r, 2, Map.of("COHORT_BACKEND", "tcp", "COHORT_RUN_ID", "tensor-first")),
                dir.resolve("logs"),
                Duration.ofSeconds(120));
        JvmWorkers.assertAllOk(results);
    }
}
