package dev.cohort.djl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.dataset.Batch;
import dev.cohort.data.ColumnMapping;
import dev.cohort.data.DataPosition;
import dev.cohort.data.LoaderOptions;
import dev.cohort.data.ParquetDataset;
import dev.cohort.data.Remainder;
import dev.cohort.data.ShardWriter;
import dev.cohort.runtime.threads.ThreadsWorld;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.IntFunction;
import java.util.stream.LongStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link DistributedParquetDataset} with ranks as threads of one JVM (the threads engine; no
 * gradients, so DJL's one-recorder-per-process limit does not apply): 230 examples of 3 features,
 * example i's features {@code i, i + 0.25, i + 0.5} and label i, in row groups of 20 over 3 files.
 */
@Timeout(120)
class DistributedParquetDatasetTest {

    private static final int EXAMPLES = 230;
    private static final int WIDTH = 3;

    @TempDir
    static Path dir;

    private static ParquetDataset data;

    @BeforeAll
    static void writeShards() {
        DjlEngines.load("PyTorch");
        float[] features = new float[EXAMPLES * WIDTH];
        int[] labels = new int[EXAMPLES];
        for (int i = 0; i < EXAMPLES; i++) {
            labels[i] = i;
            for (int k = 0; k < WIDTH; k++) {
                features[i * WIDTH + k] = i + k * 0.25f;
            }
        }
        ShardWriter.to(dir.toString()).rowsPerRowGroup(20).rowsPerFile(100).write(features, WIDTH, labels);
        data = ParquetDataset.open(List.of(dir.toString()), ColumnMapping.list("features", "label"));
    }

    /** Batches of 16, shuffled within the rank, two readers, {@code remainder}. */
    private static LoaderOptions options(Remainder remainder) {
        return new LoaderOptions()
                .batchSize(16)
                .seed(3)
                .shuffleBuffer(40)
                .readers(2)
                .remainder(remainder);
    }

    /**
     * The labels of each batch of one iteration, every batch kept open until the iteration ends and
     * then checked: float32 features {@code [rows, 3]} holding the file's values, int64 labels
     * {@code [rows]}; so the arrays are copies that outlive the loader's reuse of its memory.
     */
    static List<long[]> labels(Iterable<Batch> iteration) {
        List<Batch> batches = new ArrayList<>();
        for (Batch b : iteration) {
            batches.add(b);
        }
        List<long[]> labels = new ArrayList<>();
        for (Batch b : batches) {
            int rows = b.getSize();
            assertThat(b.getData().head().getDataType()).isEqualTo(DataType.FLOAT32);
            assertThat(b.getData().head().getShape()).isEqualTo(new Shape(rows, WIDTH));
            assertThat(b.getLabels().head().getDataType()).isEqualTo(DataType.INT64);
            assertThat(b.getLabels().head().getShape()).isEqualTo(new Shape(rows));
            long[] ids = b.getLabels().head().toLongArray();
            float[] features = b.getData().head().toFloatArray();
            float[] expected = new float[rows * WIDTH];
            for (int r = 0; r < rows; r++) {
                for (int k = 0; k < WIDTH; k++) {
                    expected[r * WIDTH + k] = ids[r] + k * 0.25f;
                }
            }
            assertThat(features).containsExactly(expected);
            labels.add(ids);
            b.close();
        }
        return labels;
    }

    /** Each rank's batches (their labels) of {@code epochs} iterations of the dataset {@code make} gives. */
    private static List<List<long[]>> run(
            int world, int epochs, IntFunction<DistributedParquetDataset> make, DataPosition from) {
        ThreadsWorld threads = new ThreadsWorld(world, world, Duration.ofSeconds(30));
        return threads.runAll(
                rank -> {
                    List<long[]> seen = new ArrayList<>();
                    try (NDManager manager = NDManager.newBaseManager();
                            DistributedParquetDataset dataset = make.apply(rank)) {
                        dataset.resumeAt(from);
                        for (int e = 0; e < epochs; e++) {
                            seen.addAll(labels(dataset.getData(manager, threads.group(rank))));
                        }
                    }
                    return seen;
                },
                Duration.ofSeconds(90));
    }

    private static List<Long> flat(List<long[]> batches) {
        return batches.stream().flatMapToLong(LongStream::of).boxed().toList();
    }

    @Test
    void twoRanksSeeDisjointSharesCoveringEveryExampleOncePerEpoch() {
        List<List<long[]>> ranks =
                run(2, 2, r -> DistributedParquetDataset.of(data, options(Remainder.DROP)), DataPosition.start(0));
        int perEpoch = (EXAMPLES / 2 + 15) / 16;
        assertThat(ranks.get(0)).hasSize(2 * perEpoch).hasSameSizeAs(ranks.get(1));
        for (int e = 0; e < 2; e++) {
            List<Long> epoch = new ArrayList<>();
            for (List<long[]> rank : ranks) {
                epoch.addAll(flat(rank.subList(e * perEpoch, (e + 1) * perEpoch)));
            }
            assertThat(epoch)
                    .as("epoch %d", e)
                    .containsExactlyInAnyOrderElementsOf(
                            LongStream.range(0, EXAMPLES).boxed().toList());
        }
        assertThat(flat(ranks.get(0).subList(0, perEpoch)))
                .as("epoch 1 reshuffled")
                .isNotEqualTo(flat(ranks.get(0).subList(perEpoch, 2 * perEpoch)));
        assertThat(dataThreads()).isEmpty();
    }

    /** Where {@code world} ranks stand after {@code batches} batches of epoch 0, and those batches' labels (all ranks). */
    private record Partial(DataPosition position, Set<Long> consumed) {}

    private static Partial partial(int world, int batches, Remainder remainder) {
        ThreadsWorld threads = new ThreadsWorld(world, world, Duration.ofSeconds(30));
        DataPosition[] positions = new DataPosition[world];
        List<List<long[]>> seen = threads.runAll(
                rank -> {
                    List<long[]> labels = new ArrayList<>();
                    try (NDManager manager = NDManager.newBaseManager();
                            DistributedParquetDataset dataset =
                                    DistributedParquetDataset.of(data, options(remainder))) {
                        Iterator<Batch> epoch =
                                dataset.getData(manager, threads.group(rank)).iterator();
                        for (int b = 0; b < batches; b++) {
                            try (Batch batch = epoch.next()) {
                                labels.add(batch.getLabels().head().toLongArray());
                            }
                        }
                        positions[rank] = dataset.position();
                    }
                    return labels;
                },
                Duration.ofSeconds(90));
        assertThat(positions).as("the same position on every rank").containsOnly(positions[0]);
        assertThat(positions[0].epoch()).isZero();
        Set<Long> consumed = new HashSet<>();
        seen.forEach(rank -> consumed.addAll(flat(rank)));
        return new Partial(positions[0], consumed);
    }

    @Test
    void aDatasetResumedAtAPositionHandsOutExactlyTheRemainingBatches() {
        List<List<long[]>> straight =
                run(2, 2, r -> DistributedParquetDataset.of(data, options(Remainder.PAD)), DataPosition.start(0));
        DataPosition after5 = partial(2, 5, Remainder.PAD).position();
        List<List<long[]>> resumed = run(2, 2, r -> DistributedParquetDataset.of(data, options(Remainder.PAD)), after5);
        for (int r = 0; r < 2; r++) {
            List<long[]> expected = straight.get(r).subList(5, straight.get(r).size());
            assertThat(resumed.get(r)).as("rank %d", r).hasSameSizeAs(expected);
            for (int b = 0; b < expected.size(); b++) {
                assertThat(resumed.get(r).get(b)).as("rank %d, batch %d", r, b).containsExactly(expected.get(b));
            }
        }
    }

    @Test
    void anElasticResumeSplitsWhatTheEpochHasLeftAmongTheNewRanks() {
        Partial two = partial(2, 3, Remainder.DROP);
        List<List<long[]>> three =
                run(3, 1, r -> DistributedParquetDataset.of(data, options(Remainder.DROP)), two.position());
        List<Long> rest = new ArrayList<>();
        three.forEach(rank -> rest.addAll(flat(rank)));
        assertThat(new HashSet<>(rest)).as("no example twice").hasSameSizeAs(rest);
        assertThat(rest).as("none consumed before").doesNotContainAnyElementsOf(two.consumed());
        int left = EXAMPLES - two.consumed().size() - rest.size();
        assertThat(left).as("left out by DROP: fewer than the 3 ranks").isBetween(0, 2);
    }

    @Test
    void iteratedAloneOnAJobOfSeveralProcessesItIsRefused() {
        assertThatThrownBy(() -> DistributedParquetDataset.refuseUnsharded(Map.of("WORLD_SIZE", "2")))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("this process is one of 2 (WORLD_SIZE)")
                .hasMessageContaining("iterate it with a DistributedTrainer");
        DistributedParquetDataset.refuseUnsharded(Map.of("WORLD_SIZE", "1"));
        DistributedParquetDataset.refuseUnsharded(Map.of());
    }

    @Test
    void anAbandonedIterationSaysSoAndItsLoaderIsClosed() {
        try (NDManager manager = NDManager.newBaseManager();
                DistributedParquetDataset dataset = DistributedParquetDataset.of(data, options(Remainder.PAD))) {
            assertThat(dataset.batchSize()).isEqualTo(16);
            Iterator<Batch> first = dataset.getData(manager).iterator();
            first.next().close();
            DataPosition after1 = dataset.position();
            Iterator<Batch> second = dataset.getData(manager).iterator();
            assertThatThrownBy(first::next)
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessage("this iteration of epoch 0 was abandoned after 1 batches "
                            + "(the dataset was iterated again, resumed or closed)");
            second.next().close();
            assertThat(dataset.position()).isNotEqualTo(after1);
            dataset.resumeAt(DataPosition.start(4));
            assertThat(dataThreads()).isEmpty();
            assertThat(labels(dataset.getData(manager)).stream()
                            .mapToInt(b -> b.length)
                            .sum())
                    .isEqualTo(EXAMPLES);
            assertThat(dataset.position()).isEqualTo(DataPosition.start(5));
        }
        assertThat(dataThreads()).isEmpty();
    }

    /**
     * A row group whose first page is overwritten fails the iteration with the data module's error
     * (naming the file); the position stays after the last good batch, the loader is closed, and the
     * iteration then says it failed.
     */
    @Test
    void aReadErrorEndsTheIterationAndLeavesThePositionAfterTheLastGoodBatch(@TempDir Path bad) throws Exception {
        float[] features = new float[100 * WIDTH];
        int[] labels = new int[100];
        List<String> files = ShardWriter.to(bad.toString())
                .rowsPerRowGroup(50)
                .rowsPerFile(50)
                .write(features, WIDTH, labels);
        String corrupt = files.get(1).replace("file:", "");
        try (java.io.RandomAccessFile raw = new java.io.RandomAccessFile(corrupt, "rw")) {
            raw.seek(4);
            raw.write(new byte[] {-1, -1, -1, -1, -1, -1});
        }
        Path file = Path.of(corrupt);
        // Hadoop's checksum beside it would refuse the whole (small) file at open; the page is what breaks here.
        java.nio.file.Files.delete(file.resolveSibling("." + file.getFileName() + ".crc"));
        ParquetDataset broken = ParquetDataset.open(List.of(bad.toString()), ColumnMapping.list("features", "label"));
        try (NDManager manager = NDManager.newBaseManager();
                DistributedParquetDataset dataset = DistributedParquetDataset.of(
                        broken, new LoaderOptions().batchSize(10).shuffleBuffer(0))) {
            Iterator<Batch> epoch = dataset.getData(manager).iterator();
            DataPosition lastGood = dataset.position();
            int good = 0;
            RuntimeException failure = null;
            while (failure == null) {
                try {
                    epoch.next().close();
                    lastGood = dataset.position();
                    good++;
                } catch (RuntimeException e) {
                    failure = e;
                }
            }
            assertThat(failure)
                    .isInstanceOf(dev.cohort.data.DataException.class)
                    .hasMessageContaining(corrupt);
            assertThat(good).isLessThan(10);
            assertThat(dataset.position()).isEqualTo(lastGood);
            assertThat(dataThreads()).isEmpty();
            assertThatThrownBy(epoch::hasNext)
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageStartingWith("epoch 0 failed after " + good + " batches: ");
        }
    }

    /** The data module's loader threads still alive. */
    static List<String> dataThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .map(Thread::getName)
                .filter(n -> n.startsWith("cohort-data-"))
                .toList();
    }
}
