package dev.cohort.bench;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@code cohort bench train --framework djl}: DJL workers on the tcp engine, one result written by the root. */
class DjlTrainBenchmarkTest {

    @Test
    @Timeout(240)
    void twoDjlWorkersOnTcpReportTheirThroughput(@TempDir Path dir) throws Exception {
        JsonNode result = TrainBenchmarkTest.trainsOnTwoTcpRanks(dir, "--framework djl --steps 5", "cohort-djl-tcp", 5);
        assertThat(result.get("params").asLong()).isEqualTo(784L * 1024 + 1024 + 1024L * 1024 + 1024 + 1024L * 10 + 10);
        assertThat(result.get("version").asText()).contains("DJL");
    }
}
