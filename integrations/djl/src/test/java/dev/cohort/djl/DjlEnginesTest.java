package dev.cohort.djl;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.testkit.JvmWorkers;
import dev.cohort.testkit.JvmWorkers.Result;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Ranks starting at once on one host, DJL's cache empty: every one loads the engine. */
class DjlEnginesTest {

    @TempDir
    Path tmp;

    @Test
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void threeProcessesLoadTheEngineFromAnEmptyCacheAtOnce() {
        Path cache = tmp.resolve("djl-cache");
        List<Result> results = JvmWorkers.run(
                3,
                r -> JvmWorkers.javaCommand(EngineLoadWorker.class, List.of("-Dai.djl.offline=true"), List.of()),
                r -> Map.of("DJL_CACHE_DIR", cache.toString()),
                tmp.resolve("logs"),
                Duration.ofSeconds(280));
        for (Result r : results) {
            assertThat(r.exitCode()).as(JvmWorkers.describe(results)).isZero();
            assertThat(r.output()).as(JvmWorkers.describe(results)).contains("OK");
        }
    }
}
