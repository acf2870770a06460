package dev.cohort.djl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.djl.Model;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
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
 * travels in the file, and the misuses are refused, naming what to do.
 */
@Timeout(60)
class ParquetCheckpointsTest {

    @TempDir
    Path tmp;

    @Test
    void theDataPositionTravelsInTheCheckpointAndMisuseIsRefused() throws Exception {
        DjlEngines.load("PyTorch");
        DjlWorker.Synthetic examples = DjlWorker.synthetic(40);
        String dir = tmp.resolve("data").toString();
        ShardWriter.to(dir).rowsPerRowGroup(10).write(examples.features(), DjlWorker.FEATURES, examples.labels());
        ParquetDataset parquet = ParquetDataset.open(List.of(dir), ColumnMapping.list("features", "label"));
        try (DistributedBackend backend = new NonDistributedBackend();
                Model model = Model.newInstance("linear")) {
            backend.initialize();
            model.setBlock(new SequentialBlock()
                    .add(Linear.builder().setUnits(DjlWorker.CLASSES).build()));
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
            }
        }
        assertThat(DistributedParquetDatasetTest.dataThreads())
                .as("closed with the trainer")
                .isEmpty();
    }
}
