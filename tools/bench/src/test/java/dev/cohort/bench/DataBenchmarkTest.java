package dev.cohort.bench;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.cohort.data.ShardWriter;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@code cohort bench data}: two tcp ranks read their shares of a small Parquet dataset. */
class DataBenchmarkTest {

    @Test
    @Timeout(120)
    void twoRanksReadTheirSharesAndReportRateWaitAndMemory(@TempDir Path dir) throws Exception {
        BenchJvm.Output run = readsTheShards(dir, 16, "--world 2 --batch 32 --epochs 2", "cohort-data");
        JsonNode r = run.json();
        assertThat(r.get("world").asInt()).isEqualTo(2);
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
        assertThat(run.log()).contains("cohort-data world=2 readers/rank=1 batch=32 examples=3000");
    }

    /** --train: the demo MLP trained from the files and from memory in turn; both runs and their ratio reported. */
    @Test
    @Timeout(180)
    void trainingFromTheFilesIsComparedWithTrainingFromMemory(@TempDir Path dir) throws Exception {
        BenchJvm.Output run = readsTheShards(
                dir,
                784,
                "--train --backend tcp --world 2 --batch 16 --steps 6 --warm 2 --repeats 1",
                "cohort-data-train");
        JsonNode r = run.json();
        assertThat(r.get("runs")).hasSize(2);
        assertThat(r.get("runs").get(0).get("source").asText()).isEqualTo("memory");
        assertThat(r.get("runs").get(1).get("source").asText()).isEqualTo("parquet");
        double parquet = r.get("parquet_samples_per_s").asDouble();
        double memory = r.get("memory_samples_per_s").asDouble();
        assertThat(parquet).isPositive();
        assertThat(memory).isPositive();
        assertThat(r.get("ratio").asDouble()).isCloseTo(parquet / memory, org.assertj.core.data.Offset.offset(1e-9));
        assertThat(r.get("parquet_wait_ms_per_step").asDouble()).isNotNegative();
        assertThat(run.log()).contains("median samples/s: parquet ");
    }

    private static final int ROWS = 3_000;

    /**
     * {@code cohort bench data ARGS} over {@link #shards} of {@code width} features: asserts that it
     * succeeded and reported {@code engine} and all {@value #ROWS} examples, and returns what it wrote.
     */
    private static BenchJvm.Output readsTheShards(Path dir, int width, String args, String engine) throws Exception {
        BenchJvm.Output run = BenchJvm.succeeds(
                dir, "data", "data " + args + " --data", shards(dir, width).toString());
        assertThat(run.json().get("engine").asText()).isEqualTo(engine);
        assertThat(run.json().get("examples").asLong()).isEqualTo(ROWS);
        return run;
    }

    /** {@value #ROWS} examples of {@code width} features (the first is the example's index) in 12 row groups of 3 files. */
    private static Path shards(Path dir, int width) {
        float[] features = new float[ROWS * width];
        int[] labels = new int[ROWS];
        for (int i = 0; i < ROWS; i++) {
            features[i * width] = i;
            labels[i] = i % 10;
        }
        Path data = dir.resolve("shards");
        ShardWriter.to(data.toString()).rowsPerRowGroup(250).rowsPerFile(1_000).write(features, width, labels);
        return data;
    }
}
