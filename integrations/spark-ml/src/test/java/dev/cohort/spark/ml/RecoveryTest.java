package dev.cohort.spark.ml;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A rank that dies mid-fit: Spark retries the training stage, the rows are streamed to the new
 * ranks again, and training resumes from the checkpoint directory rather than from the start.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class RecoveryTest extends OnLocalSpark {

    @TempDir
    Path checkpoints;

    @Test
    void aRankLostAfterTheFirstEpochIsRetriedAndTheFitResumesFromItsCheckpoint() throws Exception {
        CohortModel model = new CohortEstimator()
                .setNumWorkers(2)
                .setEpochs(3)
                .setBatchSize(16)
                .setEngine("tcp")
                .setCheckpointDir(checkpoints.toString())
                .setRankEnvironment(SparkRank.FAULT_ENV, "1")
                .fit(PipelineTest.blobs(spark, 900, 5).selectExpr("array(x0, x1, x2, x3) features", "label"));

        // Epoch 1 came from the first attempt's checkpoint; the retry trained epochs 2 and 3.
        assertThat(model.history()).extracting(EpochStats::epoch).containsExactly(1, 2, 3);
        assertThat(model.history()).extracting(EpochStats::attempt).containsExactly(0, 1, 1);
        try (Stream<Path> files = Files.walk(checkpoints)) {
            assertThat(files.map(p -> p.getFileName().toString())).contains("model.ckpt", "history.json");
        }
    }
}
