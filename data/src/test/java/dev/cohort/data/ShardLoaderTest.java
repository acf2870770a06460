package dev.cohort.data;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(120)
class ShardLoaderTest {

    @TempDir
    Path dir;

    private ParquetDataset openDir() {
        return ParquetDataset.open(List.of(dir.toString()), ColumnMapping.list("features", "label"));
    }

    /** A loader over the shards in {@code dir} from the start of epoch 0. */
    private ShardLoader loadDirFromStart(LoaderOptions options) {
        return openDir().loader(options, DataPosition.start(0));
    }

    /** The labels of each batch of the epoch from {@code from}, each row's features checked. */
    static List<int[]> epoch(ParquetDataset data, LoaderOptions options, DataPosition from) {
        List<int[]> batches = new ArrayList<>();
        try (ShardLoader loader = data.loader(options, from)) {
            while (loader.hasNext()) {
                batches.add(Shards.labelsChecked(loader.next()));
            }
            assertThat(loader.waitTime().isNegative()).isFalse();
        }
        return batches;
    }

    @Test
    void ranksReadEveryExampleOnceAsThePlanOrdersItWithAnyNumberOfReaders() {
        List<String> files = Shards.write(dir, 300, 16, 70);
        assertThat(files).hasSize(5);
        ParquetDataset data =
                ParquetDataset.open(List.of(dir + "/part-*.parquet"), ColumnMapping.list("features", "label"));
        assertThat(data.examples()).isEqualTo(300);
        assertThat(data.width()).isEqualTo(Shards.WIDTH);
        assertThat(data.files()).hasSize(5);
        int world = 3;
        int[] seen = new int[300];
        for (int rank = 0; rank < world; rank++) {
            LoaderOptions options = new LoaderOptions()
                    .rank(rank, world)
                    .batchSize(7)
                    .seed(11)
                    .shuffleBuffer(20)
                    .remainder(Remainder.DROP);
            List<int[]> one = epochInPlanOrder(data, options, 0);
            List<int[]> four = epoch(data, options.readers(4).queueDepth(1), DataPosition.start(0));
            assertThat(four).containsExactlyElementsOf(one);
            one.forEach(b -> Arrays.stream(b).forEach(id -> seen[id]++));
        }
        assertThat(Arrays.stream(seen).min().getAsInt()).isEqualTo(1);
        assertThat(Arrays.stream(seen).max().getAsInt()).isEqualTo(1);
    }

    /** One rank's batches of epoch {@code epoch}, checked to hand out its share in the plan's order. */
    static List<int[]> epochInPlanOrder(ParquetDataset data, LoaderOptions options, int epoch) {
        List<int[]> batches = epoch(data, options, DataPosition.start(epoch));
        EpochPlan plan = EpochPlan.compute(
                data.rowGroupRows(),
                options.seed,
                options.remainder,
                options.shuffleBuffer,
                DataPosition.start(epoch),
                options.worldSize,
                options.rank);
        int[] expected = IntStream.range(0, plan.perRank())
                .map(j -> plan.input[plan.order[j]])
                .toArray();
        assertThat(batches.stream().flatMapToInt(Arrays::stream).toArray()).containsExactly(expected);
        assertThat(batches).hasSize(plan.stepsLeft(options.batchSize));
        return batches;
    }

    @Test
    void aLoaderStartedFromABatchsPositionHandsOutTheRestOfTheUninterruptedEpoch() {
        Shards.write(dir, 200, 13, 200);
        checkExactResume(
                openDir(), new LoaderOptions().rank(1, 2).batchSize(8).seed(3).shuffleBuffer(50), 5);
    }

    /**
     * Loaders started from the positions after some batches of epoch {@code epoch} (the first, second,
     * sixth and last) hand out the rest of the batches the uninterrupted epoch handed out.
     */
    static void checkExactResume(ParquetDataset data, LoaderOptions options, int epoch) {
        List<int[]> whole = new ArrayList<>();
        List<DataPosition> after = new ArrayList<>();
        try (ShardLoader loader = data.loader(options, DataPosition.start(epoch))) {
            while (loader.hasNext()) {
                Batch b = loader.next();
                whole.add(Shards.labelsChecked(b));
                after.add(DataPosition.fromBytes(b.positionAfter().toBytes()));
                assertThat(loader.position()).isEqualTo(b.positionAfter());
            }
        }
        for (int k : new int[] {0, 1, 5, whole.size() - 1}) {
            assertThat(epoch(data, options, after.get(k)))
                    .containsExactlyElementsOf(whole.subList(k + 1, whole.size()));
        }
    }

    /** Rank {@code rank} of {@code world}, batches of {@code batch}, seed 2, a shuffle buffer of 30, {@code DROP}. */
    static LoaderOptions dropping(int rank, int world, int batch) {
        return new LoaderOptions()
                .rank(rank, world)
                .batchSize(batch)
                .seed(2)
                .shuffleBuffer(30)
                .remainder(Remainder.DROP);
    }

    @Test
    void afterAnElasticReformTheNewRanksReadWhatIsLeftOfTheEpochAndNothingTwice() {
        Shards.write(dir, 250, 12, 100);
        ParquetDataset data = openDir();
        int[] seen = new int[250];
        DataPosition saved = null;
        for (int rank = 0; rank < 3; rank++) {
            LoaderOptions options = dropping(rank, 3, 7);
            try (ShardLoader loader = data.loader(options, DataPosition.start(0))) {
                for (int step = 0; step < 4; step++) {
                    Arrays.stream(Shards.labelsChecked(loader.next())).forEach(id -> seen[id]++);
                }
                assertThat(saved == null || saved.equals(loader.position())).isTrue();
                saved = loader.position();
            }
        }
        assertThat(saved).hasToString("epoch 0: 3x28");
        int steps = -1;
        for (int rank = 0; rank < 2; rank++) {
            LoaderOptions options = dropping(rank, 2, 5);
            List<int[]> rest = epoch(data, options, saved);
            assertThat(steps == -1 || steps == rest.size()).isTrue();
            steps = rest.size();
            rest.forEach(b -> Arrays.stream(b).forEach(id -> seen[id]++));
        }
        assertThat(Arrays.stream(seen).max().getAsInt()).isEqualTo(1);
        // 3 x 83 = 249 in the first segment's shares, 84 consumed: 166 left, even, so none dropped
        assertThat(Arrays.stream(seen).sum()).isEqualTo(250);
    }

    @Test
    void scalarColumnsStackIntoOneVector() {
        List<String> columns = List.of("a", "b", "c", "d", "e");
        ColumnMapping mapping = ColumnMapping.scalars(columns, "y");
        Shards.write(dir.toString(), 40, 9, 40, mapping);
        ParquetDataset data = ParquetDataset.open(List.of(dir.toString()), mapping);
        assertThat(data.width()).isEqualTo(5);
        List<int[]> batches = epoch(data, new LoaderOptions().batchSize(40).shuffleBuffer(0), DataPosition.start(0));
        assertThat(batches).hasSize(1);
        assertThat(batches.get(0)).hasSize(40);
    }

    /**
     * Writes {@code rows} rows of a list column {@code f} of {@code element} and a label column
     * {@code y} of {@code label} (filled by {@code fill}), then checks the one batch of them.
     */
    private void checkOneBatch(
            String element,
            String label,
            int rows,
            java.util.function.BiConsumer<org.apache.parquet.example.data.Group, Integer> fill,
            java.util.function.Consumer<Batch> check)
            throws Exception {
        String schema = "message m { required group f (LIST) { repeated group list { required " + element
                + " element; } } required " + label + " y; }";
        String file = DataErrorsTest.write(dir, element + ".parquet", schema, rows, fill);
        ParquetDataset data = ParquetDataset.open(List.of(file), ColumnMapping.list("f", "y"));
        try (ShardLoader loader =
                data.loader(new LoaderOptions().batchSize(rows).shuffleBuffer(0).seed(4), DataPosition.start(0))) {
            check.accept(loader.next());
        }
    }

    @Test
    void listsOfDoublesOrIntsBecomeFloatsAndInt64LabelsComeAsLongs() throws Exception {
        checkOneBatch(
                "double",
                "int64",
                30,
                (row, i) -> {
                    org.apache.parquet.example.data.Group list = row.addGroup("f");
                    for (int k = 0; k < 3; k++) {
                        list.addGroup("list").append("element", i + k / 4.0);
                    }
                    row.append("y", 10_000_000_000L + i);
                },
                batch -> {
                    assertThat(batch.hasLongLabels()).isTrue();
                    assertThatThrownBy(batch::intLabels).isInstanceOf(IllegalStateException.class);
                    for (int r = 0; r < 30; r++) {
                        int i = (int) (batch.longLabels().get(r) - 10_000_000_000L);
                        assertThat(batch.features().get(r * 3 + 2)).isEqualTo(i + 0.5f);
                    }
                });
        checkOneBatch(
                "int32",
                "int32",
                10,
                (row, i) -> {
                    row.addGroup("f").addGroup("list").append("element", -i);
                    row.append("y", i);
                },
                batch -> {
                    for (int r = 0; r < 10; r++) {
                        assertThat(batch.features().get(r))
                                .isEqualTo(-batch.intLabels().get(r));
                    }
                });
    }

    @Test
    void theShuffleBufferAndOneRowGroupBoundWhatTheLoaderHolds() {
        Shards.write(dir, 2000, 50, 2000);
        try (ShardLoader loader = loadDirFromStart(
                new LoaderOptions().batchSize(16).shuffleBuffer(100).readers(3))) {
            while (loader.hasNext()) {
                Shards.labelsChecked(loader.next());
            }
            assertThat(loader.peakHeldExamples()).isBetween(100, 100 + 50);
        }
    }

    @Test
    void closingMidEpochStopsEveryThread() {
        Shards.write(dir, 500, 10, 100);
        try (ShardLoader loader =
                loadDirFromStart(new LoaderOptions().readers(3).batchSize(4).queueDepth(2))) {
            loader.next();
            assertThat(dataThreads()).isNotEmpty();
        }
        assertThat(dataThreads()).isEmpty();
    }

    static List<String> dataThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(Thread::isAlive)
                .map(Thread::getName)
                .filter(n -> n.startsWith("cohort-data-"))
                .toList();
    }
}
