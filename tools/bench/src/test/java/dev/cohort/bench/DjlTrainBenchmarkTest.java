package dev.cohort.bench;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@code cohort bench train --framework djl}: DJL workers on the tcp engine, one result written by the root. */
class DjlTrainBenchmarkTest {

    @Test
    @Timeout(240)
    void twoDjlWorkersOnTcpReportTheirThroughput(@TempDir Path dir) throws Exception {
        Path json = dir.resolve("djl.json");
        Path log = dir.resolve("bench.log");
        int exit = BenchJvm.run(
                log,
                List.of(BenchJvm.words(
                        "train --framework djl --backend tcp --world 2 --steps 5 --warm 1 --batch 8 --json",
                        json.toString())));
        assertThat(exit).as(Files.readString(log)).isZero();
        JsonNode result = new ObjectMapper().readTree(Files.readString(json));
        assertThat(result.get("engine").asText()).isEqualTo("cohort-djl-tcp");
        assertThat(result.get("world").asInt()).isEqualTo(2);
        assertThat(result.get("steps").asInt()).isEqualTo(5);
        assertThat(result.get("params").asLong()).isEqualTo(784L * 1024 + 1024 + 1024L * 1024 + 1024 + 1024L * 10 + 10);
        assertThat(result.get("version").asText()).contains("DJL");
        assertThat(result.get("samples_per_s").asDouble()).isPositive();
        assertThat(Files.readString(log)).contains("cohort-djl-tcp mlp world=2");
    }
}
