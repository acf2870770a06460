package dev.cohort.bench;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.cohort.data.ShardWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@code cohort bench data}: two tcp ranks read their shares of a small Parquet dataset. */
class DataBenchmarkTest {

    @Test
    @Timeout(120)
    void twoRanksReadTheirSharesAndReportRateWaitAndMemory(@TempDir Path dir) throws Exception {
        int rows = 3_000;
        int width = 16;
        float[] features = new float[rows * width];
        int[] labels = new int[rows];
        for (int i = 0; i < rows; i++) {
            features[i * width] = i;
            labels[i] = i % 10;
        }
        Path data = dir.resolve("shards");
        ShardWriter.to(data.toString()).rowsPerRowGroup(250).rowsPerFile(1_000).write(features, width, labels);

        Path json = dir.resolve("data.json");
        Path log = dir.resolve("bench.log");
        List<String> args = List.of(BenchJvm.words(
                "data --world 2 --batch 32 --epochs 2 --data", data.toString(), "--json", json.toString()));
        assertThat(BenchJvm.run(log, args)).as(Files.readString(log)).isZero();

        JsonNode r = new ObjectMapper().readTree(Files.readString(json));
        assertThat(r.get("engine").asText()).isEqualTo("cohort-data");
        assertThat(r.get("world").asInt()).isEqualTo(2);
        assertThat(r.get("examples").asLong()).isEqualTo(rows);
        assertThat(r.get("row_groups").asInt()).isEqualTo(12);
        assertThat(r.get("dataset_bytes").asLong()).isPositive();
        assertThat(r.get("runs_samples_per_s")).as("2 ranks x 2 epochs").hasSize(4);
        assertThat(r.get("samples_per_s_per_rank")).hasSize(2);
        double slowest = Math.min(
                r.get("samples_per_s_per_rank").get(0).asDouble(),
                r.get("samples_per_s_per_rank").get(1).asDouble());
        assertThat(r.get("samples_per_s").asDouble()).isPositive().isEqualTo(slowest);
        assertThat(r.get("wait_ms_per_batch").asDouble()).isNotNegative();
        assertThat(r.get("peak_rss_bytes")).hasSize(2);
        assertThat(r.get("peak_rss_bytes").get(1).asLong()).isGreaterThan(16L << 20);
        assertThat(Files.readString(log)).contains("cohort-data world=2 readers/rank=1 batch=32 examples=3000");
    }
}
