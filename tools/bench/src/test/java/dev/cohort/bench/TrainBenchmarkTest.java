package dev.cohort.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@code cohort bench train --sync-only}: two tcp workers that train alone and meet once a step. */
class TrainBenchmarkTest {

    @Test
    @Timeout(240)
    void syncOnlyTrainsAloneAndMeetsEveryStep(@TempDir Path dir) throws Exception {
        JsonNode result = trainsOnTwoTcpRanks(dir, "--steps 6 --sync-only", "cohort-tcp-sync-only", 6);
        assertThat(result.get("communication_share").asDouble())
                .as("the per-step allreduce's wait")
                .isBetween(0.0, 1.0);
        assertThat(result.get("cpu_ms_per_step").asDouble()).isPositive();
        assertThat(result.has("memory"))
                .as("nothing distributed: no optimizer state to report")
                .isFalse();
    }

    /**
     * {@code cohort bench train} on 2 tcp ranks with batch 8 after 1 warm-up step, and {@code args}:
     * asserts that it succeeded and reported {@code engine}, the world, {@code steps} and its
     * throughput, and returns its JSON.
     */
    static JsonNode trainsOnTwoTcpRanks(Path dir, String args, String engine, int steps) throws Exception {
        BenchJvm.Output run =
                BenchJvm.succeeds(dir, "train", "train --backend tcp --world 2 --warm 1 --batch 8 " + args);
        JsonNode result = run.json();
        assertThat(result.get("engine").asText()).isEqualTo(engine);
        assertThat(result.get("world").asInt()).isEqualTo(2);
        assertThat(result.get("steps").asInt()).isEqualTo(steps);
        assertThat(result.get("samples_per_s").asDouble()).isPositive();
        assertThat(run.log()).contains(engine + " mlp world=2");
        return result;
    }

    @Test
    @Timeout(240)
    void scalingTrainsAtWorldOneFirstAndReportsTheEfficiency(@TempDir Path dir) throws Exception {
        JsonNode result = trainsOnTwoTcpRanks(dir, "--steps 6 --scaling", "cohort-tcp", 6);
        double world1 = result.get("world1_samples_per_s").asDouble();
        assertThat(world1).isPositive();
        assertThat(result.get("scaling_efficiency").asDouble())
                .isCloseTo(
                        result.get("samples_per_s").asDouble() / (2 * world1),
                        org.assertj.core.data.Offset.offset(1e-9));
        refuses(dir, "--backend tcp --world 1 --scaling", "--scaling needs --world 2 or more on one node");
    }

    @Test
    @Timeout(60)
    void syncOnlyRefusesOptionsThatDistribute(@TempDir Path dir) throws Exception {
        refuses(dir, "--backend tcp --world 2 --sync-only --zero 1", "--sync-only distributes nothing");
    }

    /** COHORT_BLAS reaches the worker: libtorch on the host's OpenBLAS, and the result says so; a bad value is refused. */
    @Test
    @Timeout(240)
    void theResultSaysWhichOpenBlasLibtorchComputedWith(@TempDir Path dir) throws Exception {
        assumeTrue(
                Stream.of("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib")
                        .anyMatch(d -> Files.isRegularFile(Path.of(d, "libopenblas.so.0"))),
                "no OpenBLAS on this host");
        Path json = dir.resolve("host.json");
        Path log = dir.resolve("host.log");
        List<String> args = List.of(
                BenchJvm.words("train --backend none --world 1 --steps 3 --warm 1 --batch 8 --json", json.toString()));
        assertThat(BenchJvm.run(log, args, Map.of("COHORT_BLAS", "system")))
                .as(Files.readString(log))
                .isZero();
        assertThat(new ObjectMapper()
                        .readTree(Files.readString(json))
                        .get("version")
                        .asText())
                .contains("libtorch (JavaCPP pytorch)")
                .containsPattern(" on host OpenBLAS /\\S*openblas");
        assertThat(Files.readString(log)).containsPattern("computes with: .* on host OpenBLAS /");

        Path bundled = dir.resolve("bundled.log");
        assertThat(BenchJvm.run(bundled, args, Map.of("COHORT_BLAS", "bundled")))
                .as(Files.readString(bundled))
                .isZero();
        assertThat(Files.readString(bundled)).contains(" on bundled OpenBLAS;");

        Path bad = dir.resolve("bad.log");
        assertThat(BenchJvm.run(bad, args, Map.of("COHORT_BLAS", "openblas"))).isNotZero();
        assertThat(Files.readString(bad))
                .contains("COHORT_BLAS=openblas: expected auto, bundled, system or the absolute path");
    }

    /** {@code cohort bench train args} fails, saying {@code message}. */
    private static void refuses(Path dir, String args, String message) throws Exception {
        Path log = dir.resolve("refused.log");
        assertThat(BenchJvm.run(log, List.of(BenchJvm.words("train " + args)))).isNotZero();
        assertThat(Files.readString(log)).contains(message);
    }
}
