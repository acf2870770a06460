package dev.cohort.djl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.djl.Model;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.dataset.Batch;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.checkpoint.TrainingPosition;
import dev.cohort.data.ColumnMapping;
import dev.cohort.data.LoaderOptions;
import dev.cohort.data.ParquetDataset;
import dev.cohort.data.ShardWriter;
import dev.cohort.runtime.threads.NonDistributedBackend;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link Checkpoints} with a {@link DistributedParquetDataset}, on one process: the data position
 * travels in the file, the misuses are refused, naming what to do, and a format-1 file still loads.
 */
@Timeout(60)
class ParquetCheckpointsTest {

    @TempDir
    Path tmp;

    /** {@code file} (format 2, saved without a dataset) as format 1 wrote it: version 1, no data section. */
    private Path formatOne(Path file) throws java.io.IOException {
        byte[] two = java.nio.file.Files.readAllBytes(file);
        java.nio.ByteBuffer bytes = java.nio.ByteBuffer.wrap(two);
        int version = 2 + bytes.getShort(0); // after the magic, in writeUTF's form
        assertThat(bytes.getInt(version)).isEqualTo(2);
        int order = version + 4;
        int flag = order + 2 + bytes.getShort(order) + 4 + 4 + 8; // after the byte order and the position
        assertThat(two[flag]).as("no data section").isZero();
        byte[] one = new byte[two.length - 1];
        System.arraycopy(two, 0, one, 0, flag);
        System.arraycopy(two, flag + 1, one, flag, two.length - flag - 1);
        java.nio.ByteBuffer.wrap(one).putInt(version, 1);
        Path v1 = tmp.resolve("format-1.djl");
        java.nio.file.Files.write(v1, one);
        return v1;
    }

    @Test
    void theDataPositionTravelsInTheCheckpointAndMisuseIsRefused() throws Exception {
        DjlEngines.load("PyTorch");
        DjlWorker.Synthetic examples = DjlWorker.synthetic(40);
        String dir = tmp.resolve("data").toString();
        ShardWriter.to(dir).rowsPerRowGroup(10).write(examples.features(), DjlWorker.FEATURES, examples.labels());
        ParquetDataset parquet = ParquetDataset.open(List.of(dir), ColumnMapping.list("features", "label"));
        try (DistributedBackend backend = new NonDistributedBackend();
                Model model = Model.newInstance("mlp")) {
            backend.initialize();
            // Not one linear layer: DJL's first step refuses gradients that sum to zero, and under
            // softmax cross-entropy a lone linear layer's do, up to rounding (sometimes exactly).
            model.setBlock(DjlWorker.mlp());
            DefaultTrainingConfig config = new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                    .optOptimizer(Optimizer.sgd()
                            .setLearningRateTracker(Tracker.fixed(0.1f))
                            .build());
            try (DistributedTrainer trainer = DistributedTrainer.of(backend, model, config);
                    DistributedParquetDataset data =
                            DistributedParquetDataset.of(parquet, new LoaderOptions().batchSize(8));
                    DistributedParquetDataset resumed =
                            DistributedParquetDataset.of(parquet, new LoaderOptions().batchSize(8));
                    DistributedParquetDataset wider =
                            DistributedParquetDataset.of(parquet, new LoaderOptions().batchSize(16))) {
                trainer.initialize(new Shape(8, DjlWorker.FEATURES));
                Iterator<Batch> epoch = trainer.iterateDataset(data).iterator();
                for (int b = 0; b < 2; b++) {
                    try (Batch batch = epoch.next()) {
                        DjlWorker.trainStep(trainer, batch);
                    }
                }
                TrainingPosition at = new TrainingPosition(0, 2, 2);
                Path withData = tmp.resolve("with-data.djl");
                Path without = tmp.resolve("without.djl");
                Checkpoints.save(withData, trainer, at, data);
                Checkpoints.save(without, trainer, at);

                assertThat(Checkpoints.load(withData, trainer, resumed)).isEqualTo(at);
                assertThat(resumed.position()).isEqualTo(data.position()).hasToString("epoch 0: 1x16");
                assertThat(Checkpoints.load(without, trainer)).isEqualTo(at);
                assertThatThrownBy(() -> Checkpoints.load(withData, trainer))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("holds a data position (epoch 0: 1x16): load it with "
                                + "Checkpoints.load(file, trainer, dataset)");
                assertThatThrownBy(() -> Checkpoints.load(without, trainer, resumed))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("holds no data position");
                assertThatThrownBy(() -> Checkpoints.load(withData, trainer, wider))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining(
                                "was saved at world size 1 with batches of 8 per rank, this dataset's are of 16");
                assertThat(wider.position()).hasToString("epoch 0:");
                assertThat(Checkpoints.load(formatOne(without), trainer)).isEqualTo(at);
            }
        }
        assertThat(DistributedParquetDatasetTest.dataThreads())
                .as("closed with the trainer")
                .isEmpty();
    }
}
