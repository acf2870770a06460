package dev.cohort.torch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.cohort.api.DistributeRequest;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.checkpoint.TrainingPosition;
import dev.cohort.data.ColumnMapping;
import dev.cohort.data.DataException;
import dev.cohort.data.DataPosition;
import dev.cohort.data.LoaderOptions;
import dev.cohort.data.ParquetDataset;
import dev.cohort.data.ShardWriter;
import dev.cohort.libtorch.LibTorch;
import java.io.RandomAccessFile;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@link ParquetLoader} on ranks of the threads engine, over Parquet files written by {@link ShardWriter}. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ParquetLoaderTest {

    /** Examples: example i has label i and features i + k / 1000 (k < WIDTH). */
    private static final int EXAMPLES = 240;

    private static final int WIDTH = 3;
    private static final int BATCH = 8;

    @TempDir
    Path dir;

    @BeforeAll
    static void load() {
        LibTorch.load();
    }

    private ParquetLoader loader() {
        float[] features = new float[EXAMPLES * WIDTH];
        int[] labels = new int[EXAMPLES];
        for (int i = 0; i < EXAMPLES; i++) {
            labels[i] = i;
            for (int k = 0; k < WIDTH; k++) {
                features[i * WIDTH + k] = i + k / 1000f;
            }
        }
        String out = dir.resolve("shards").toString();
        ShardWriter.to(out).rowsPerRowGroup(20).rowsPerFile(100).write(features, WIDTH, labels);
        ParquetDataset data = ParquetDataset.open(List.of(out), ColumnMapping.list("features", "label"));
        return ParquetLoader.of(
                data, new LoaderOptions().batchSize(BATCH).seed(5).shuffleBuffer(30));
    }

    private static ParquetLoader distributed(DistributedBackend backend, ParquetLoader loader) {
        return backend.distribute(DistributeRequest.of(null, null, loader, null))
                .trainingData();
    }

    /** The labels of a batch, after checking its tensors: float inputs [rows, WIDTH] of the label's values, int64 targets. */
    private static long[] labels(MiniBatch batch) {
        assertThat(batch.inputs().scalar_type().value).isEqualTo(torch.ScalarType.Float.value);
        assertThat(batch.targets().scalar_type().value).isEqualTo(torch.ScalarType.Long.value);
        assertThat(batch.inputs().sizes().vec().get()).containsExactly(batch.size(), WIDTH);
        long[] labels = new long[(int) batch.size()];
        batch.targets().data_ptr_long().get(labels);
        float[] inputs = new float[labels.length * WIDTH];
        batch.inputs().data_ptr_float().get(inputs);
        for (int r = 0; r < labels.length; r++) {
            for (int k = 0; k < WIDTH; k++) {
                assertThat(inputs[r * WIDTH + k]).isEqualTo(labels[r] + k / 1000f);
            }
        }
        return labels;
    }

    /** Up to {@code batches} batches of {@code epoch} (all when negative), as label lists. */
    private static List<List<Long>> take(ParquetLoader.Epoch epoch, int batches) {
        List<List<Long>> out = new ArrayList<>();
        for (MiniBatch b : epoch) {
            List<Long> l = new ArrayList<>();
            for (long v : labels(b)) {
                l.add(v);
            }
            out.add(l);
            if (out.size() == batches) {
                break;
            }
        }
        return out;
    }

    private static List<Long> flat(List<List<Long>> batches) {
        return batches.stream().flatMap(List::stream).toList();
    }

    @Test
    void twoRanksSeeDisjointSharesThatCoverEveryExampleOncePerEpoch() {
        ParquetLoader whole = loader();
        List<List<List<Long>>> perRank = ThreadRanks.run(2, Duration.ofSeconds(100), backend -> {
            ParquetLoader mine = distributed(backend, whole);
            List<List<Long>> epochs = new ArrayList<>();
            for (int e = 0; e < 2; e++) {
                try (ParquetLoader.Epoch epoch = mine.epoch(e)) {
                    assertThat(epoch.steps()).isEqualTo(EXAMPLES / 2 / BATCH);
                    epochs.add(flat(take(epoch, -1)));
                }
            }
            return epochs;
        });
        for (int e = 0; e < 2; e++) {
            assertThat(perRank.get(0).get(e)).hasSameSizeAs(perRank.get(1).get(e));
            List<Long> both = new ArrayList<>(perRank.get(0).get(e));
            both.addAll(perRank.get(1).get(e));
            assertThat(both)
                    .as("the ids 0..%d, each once", EXAMPLES - 1)
                    .hasSize(EXAMPLES)
                    .doesNotHaveDuplicates();
        }
        assertThat(perRank.get(0).get(1))
                .as("reshuffled each epoch")
                .isNotEqualTo(perRank.get(0).get(0));
        assertThat(Thread.getAllStackTraces().keySet())
                .as("every epoch's reader threads stopped")
                .noneMatch(t -> t.getName().startsWith("cohort-data-"));
        assertThatThrownBy(() -> whole.epoch(0))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("iterate the loader distribute() returned");
    }

    @Test
    void aRunResumedFromACheckpointGetsExactlyTheBatchesTheUninterruptedRunHadLeft() {
        ParquetLoader whole = loader();
        int before = 4;
        List<List<List<Long>>> straight = ThreadRanks.run(2, Duration.ofSeconds(100), backend -> {
            try (ParquetLoader.Epoch epoch = distributed(backend, whole).epoch(1)) {
                return take(epoch, -1);
            }
        });
        Path file = dir.resolve("checkpoint.pt");
        List<DataPosition> saved = ThreadRanks.run(2, Duration.ofSeconds(100), backend -> {
            try (ParquetLoader.Epoch epoch = distributed(backend, whole).epoch(1)) {
                assertThat(take(epoch, before))
                        .isEqualTo(straight.get(backend.rank()).subList(0, before));
                if (backend.isRootWorker()) {
                    TinyTraining.Net model = new TinyTraining.Net(0);
                    Checkpoints.save(
                            file,
                            model,
                            TinyTraining.sgd(model),
                            new TrainingPosition(1, before, 99),
                            epoch.position());
                }
                return epoch.position(); // closed with batches left: its threads stop
            }
        });
        assertThat(saved.get(0)).isEqualTo(saved.get(1));
        assertThat(saved.get(0).toString()).isEqualTo("epoch 1: 2x" + before * BATCH);
        List<List<List<Long>>> resumed = ThreadRanks.run(2, Duration.ofSeconds(100), backend -> {
            TinyTraining.Net model = new TinyTraining.Net(1);
            Checkpoints.Loaded loaded = Checkpoints.loadWithData(file, model, TinyTraining.sgd(model));
            assertThat(loaded.position()).isEqualTo(new TrainingPosition(1, before, 99));
            try (ParquetLoader.Epoch epoch = distributed(backend, whole).epoch(loaded.data())) {
                return take(epoch, -1);
            }
        });
        for (int r = 0; r < 2; r++) {
            List<List<Long>> all = straight.get(r);
            assertThat(resumed.get(r)).isEqualTo(all.subList(before, all.size()));
        }
        TinyTraining.Net model = new TinyTraining.Net(2);
        Path plain = dir.resolve("plain.pt");
        Checkpoints.save(plain, model, TinyTraining.sgd(model), TrainingPosition.start());
        assertThat(Checkpoints.loadWithData(plain, model, TinyTraining.sgd(model))
                        .data())
                .as("a checkpoint saved without a data position")
                .isNull();
    }

    @Test
    void anEpochGoesOnOnOneRankAfterTwoWithNoExampleLost() {
        ParquetLoader whole = loader();
        int before = 5;
        List<List<Long>> firstPart = new ArrayList<>();
        List<DataPosition> at = ThreadRanks.run(2, Duration.ofSeconds(100), backend -> {
            try (ParquetLoader.Epoch epoch = distributed(backend, whole).epoch(3)) {
                List<Long> seen = flat(take(epoch, before));
                synchronized (firstPart) {
                    firstPart.add(seen);
                }
                return epoch.position();
            }
        });
        List<Long> rest = ThreadRanks.run(1, Duration.ofSeconds(100), backend -> {
                    try (ParquetLoader.Epoch epoch = distributed(backend, whole).epoch(at.get(0))) {
                        return flat(take(epoch, -1));
                    }
                })
                .get(0);
        List<Long> all = new ArrayList<>(rest);
        firstPart.forEach(all::addAll);
        assertThat(all).hasSize(EXAMPLES).doesNotHaveDuplicates();
    }

    @Test
    void startingAnotherEpochEndsTheOpenOne() {
        ParquetLoader undistributed = loader();
        ParquetLoader.Epoch first = undistributed.epoch(0);
        Iterator<MiniBatch> batches = first.iterator();
        assertThat(labels(batches.next())).hasSize(BATCH);
        try (ParquetLoader.Epoch second = undistributed.epoch(1)) {
            assertThatThrownBy(batches::next)
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("closed");
            assertThat(flat(take(second, -1))).as("undistributed: all of it").hasSize(EXAMPLES);
        }
        assertThat(Thread.getAllStackTraces().keySet())
                .noneMatch(t -> t.getName().startsWith("cohort-data-"));
    }

    @Test
    void aCorruptRowGroupStopsEveryRankWithTheSameErrorNamingTheFile() throws Exception {
        ParquetLoader whole = loader();
        String file = whole.dataset().files().get(1).replace("file:", "");
        try (RandomAccessFile raw = new RandomAccessFile(file, "rw")) {
            raw.seek(4); // the first page header, right after the magic bytes
            raw.write(new byte[] {(byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF});
        }
        List<Throwable> errors = ThreadRanks.run(2, Duration.ofSeconds(100), backend -> {
            try (ParquetLoader.Epoch epoch = distributed(backend, whole).epoch(0)) {
                take(epoch, -1);
                return null;
            } catch (DataException e) {
                return e;
            }
        });
        assertThat(errors)
                .allSatisfy(e -> assertThat(e)
                        .isInstanceOf(DataException.class)
                        .hasMessageContaining(file)
                        .hasMessageContaining("row group 0"));
        assertThat(errors.get(0).getMessage()).isEqualTo(errors.get(1).getMessage());
    }
}
