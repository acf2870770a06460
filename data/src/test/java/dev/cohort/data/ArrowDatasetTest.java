package dev.cohort.data;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.runtime.threads.ThreadsWorld;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.apache.arrow.compression.CommonsCompressionFactory;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.compression.CompressionUtil;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Arrow IPC files read as Parquet files are: the record batch is the unit of sharding. */
@Timeout(180)
class ArrowDatasetTest {

    @TempDir
    Path dir;

    @Test
    void twoRanksReadDisjointSharesThatCoverEachEpochInThePlansOrder() {
        List<String> files = ArrowShards.write(dir.toString(), 300, 16, 70);
        assertThat(files).hasSize(5);
        ParquetDataset data =
                ParquetDataset.open(List.of(dir + "/part-*.arrow"), ColumnMapping.list("features", "label"));
        assertThat(data.examples()).isEqualTo(300);
        assertThat(data.width()).isEqualTo(Shards.WIDTH);
        assertThat(data.rowGroups()).isEqualTo(4 * 5 + 2); // 70 rows: 4 batches of 16 and one of 6; 20 rows: 2
        assertThat(data.longLabels()).isFalse();
        assertThat(data.describe())
                .startsWith("300 examples of 5 features in 22 record batches of 5 files")
                .contains("part-00004.arrow: 2 record batches, 20 rows");
        assertThat(ParquetDataset.open(List.of(dir.toString()), ColumnMapping.list("features", "label"))
                        .files())
                .isEqualTo(data.files());
        int world = 2;
        for (int epoch = 0; epoch < 2; epoch++) {
            int[] seen = new int[300];
            for (int rank = 0; rank < world; rank++) {
                LoaderOptions options = ShardLoaderTest.dropping(rank, world, 7).readers(2);
                List<int[]> mine = ShardLoaderTest.epochInPlanOrder(data, options, epoch);
                mine.forEach(b -> Arrays.stream(b).forEach(id -> seen[id]++));
            }
            assertThat(Arrays.stream(seen).min().getAsInt())
                    .as("epoch %d", epoch)
                    .isEqualTo(1);
            assertThat(Arrays.stream(seen).max().getAsInt())
                    .as("epoch %d", epoch)
                    .isEqualTo(1);
        }
    }

    @Test
    void aLoaderStartedFromABatchsPositionHandsOutTheRestOfTheUninterruptedEpoch() {
        ArrowShards.write(dir.toString(), 200, 13, 120);
        ParquetDataset data = ParquetDataset.open(List.of(dir.toString()), ColumnMapping.list("features", "label"));
        ShardLoaderTest.checkExactResume(
                data, new LoaderOptions().rank(1, 2).batchSize(8).seed(3).shuffleBuffer(50), 2);
    }

    /** Opens {@code file} with {@code columns} and returns its one batch of {@code rows}. */
    private static void oneBatch(
            String file, ColumnMapping columns, int rows, java.util.function.Consumer<Batch> check) {
        ParquetDataset data = ParquetDataset.open(List.of(file), columns);
        try (ShardLoader loader =
                data.loader(new LoaderOptions().batchSize(rows).shuffleBuffer(0).seed(4), DataPosition.start(0))) {
            check.accept(loader.next());
        }
    }

    @Test
    void listsOfDoublesIntsOrVariableLengthBecomeFloatsAndInt64LabelsComeAsLongs() {
        Schema doubles = new Schema(List.of(
                ArrowShards.column("f", ArrowType.List.INSTANCE, ArrowShards.DOUBLE),
                ArrowShards.column("y", ArrowShards.INT64, null)));
        String file = ArrowShards.write(dir + "/doubles.arrow", doubles, 30, 7, (batch, r, i) -> {
            int at = ArrowShards.startList(batch, "f", r);
            Float8Vector values = (Float8Vector) ((ListVector) batch.getVector("f")).getDataVector();
            for (int k = 0; k < 3; k++) {
                values.setSafe(at + k, i + k / 4.0);
            }
            ArrowShards.endList(batch, "f", r, 3);
            ((BigIntVector) batch.getVector("y")).setSafe(r, 10_000_000_000L + i);
        });
        oneBatch(file, ColumnMapping.list("f", "y"), 30, batch -> {
            assertThat(batch.hasLongLabels()).isTrue();
            assertThat(batch.width()).isEqualTo(3);
            for (int r = 0; r < 30; r++) {
                int i = (int) (batch.longLabels().get(r) - 10_000_000_000L);
                assertThat(batch.features().get(r * 3)).isEqualTo(i);
                assertThat(batch.features().get(r * 3 + 2)).isEqualTo(i + 0.5f);
            }
        });
        Schema ints = new Schema(List.of(
                ArrowShards.column("f", new ArrowType.FixedSizeList(2), ArrowShards.INT32),
                ArrowShards.column("y", ArrowShards.INT32, null)));
        String intFile = ArrowShards.write(dir + "/ints.feather", ints, 10, 4, (batch, r, i) -> {
            FixedSizeListVector f = (FixedSizeListVector) batch.getVector("f");
            int at = f.startNewValue(r);
            ((IntVector) f.getDataVector()).setSafe(at, -i);
            ((IntVector) f.getDataVector()).setSafe(at + 1, 1_000_000 + i);
            ((IntVector) batch.getVector("y")).setSafe(r, i);
        });
        oneBatch(intFile, ColumnMapping.list("f", "y"), 10, batch -> {
            for (int r = 0; r < 10; r++) {
                int i = batch.intLabels().get(r);
                assertThat(batch.features().get(r * 2)).isEqualTo(-i);
                assertThat(batch.features().get(r * 2 + 1)).isEqualTo(1_000_000 + i);
            }
        });
    }

    @Test
    void scalarColumnsOfEachNumericTypeStackIntoOneVector() {
        Schema scalars = new Schema(List.of(
                ArrowShards.column("a", ArrowShards.FLOAT, null),
                ArrowShards.column("b", ArrowShards.DOUBLE, null),
                ArrowShards.column("c", ArrowShards.INT32, null),
                ArrowShards.column("d", ArrowShards.INT64, null),
                ArrowShards.column("y", ArrowShards.INT64, null)));
        String file = ArrowShards.write(dir + "/scalars.arrow", scalars, 40, 9, (batch, r, i) -> {
            ((Float4Vector) batch.getVector("a")).setSafe(r, i + 0.25f);
            ((Float8Vector) batch.getVector("b")).setSafe(r, i + 0.5);
            ((IntVector) batch.getVector("c")).setSafe(r, -i);
            ((BigIntVector) batch.getVector("d")).setSafe(r, 7L * i);
            ((BigIntVector) batch.getVector("y")).setSafe(r, i);
        });
        // d before c: the mapping's order, not the file's
        oneBatch(file, ColumnMapping.scalars(List.of("a", "b", "d", "c"), "y"), 40, batch -> {
            assertThat(batch.width()).isEqualTo(4);
            for (int r = 0; r < 40; r++) {
                long i = batch.longLabels().get(r);
                assertThat(new float[] {
                            batch.features().get(r * 4),
                            batch.features().get(r * 4 + 1),
                            batch.features().get(r * 4 + 2),
                            batch.features().get(r * 4 + 3)
                        })
                        .containsExactly(i + 0.25f, i + 0.5f, 7f * i, -i);
            }
        });
    }

    /** pyarrow's {@code write_feather} compresses with LZ4 unless told otherwise; Zstandard is the other codec. */
    @Test
    void recordBatchesCompressedWithLz4OrZstandardAreReadAsWritten() {
        for (CompressionUtil.CodecType codec :
                List.of(CompressionUtil.CodecType.LZ4_FRAME, CompressionUtil.CodecType.ZSTD)) {
            String file = ArrowShards.write(
                    dir.resolve(codec + ".arrow").toString(),
                    ArrowShards.lists(),
                    300,
                    64,
                    ArrowShards::shardRow,
                    CommonsCompressionFactory.INSTANCE,
                    codec);
            ParquetDataset data = ParquetDataset.open(List.of(file), ColumnMapping.list("features", "label"));
            int[] seen = new int[300];
            try (ShardLoader loader =
                    data.loader(new LoaderOptions().batchSize(50).shuffleBuffer(0), DataPosition.start(0))) {
                while (loader.hasNext()) {
                    Arrays.stream(Shards.labelsChecked(loader.next())).forEach(id -> seen[id]++);
                }
            }
            assertThat(seen).as("%s: each example once", codec).containsOnly(1);
        }
    }

    @Test
    void twoRanksReadTheirSharesOfArrowFilesOverHdfs() throws Exception {
        MiniDFSCluster cluster = HdfsTest.start(dir);
        try {
            String root = cluster.getFileSystem().getUri() + "/cohort/arrow";
            List<String> files = ArrowShards.write(root, 400, 25, 100);
            assertThat(files).hasSize(4).allMatch(f -> f.startsWith("hdfs://"));
            ThreadsWorld world = new ThreadsWorld(2, 2, Duration.ofSeconds(60));
            List<List<Integer>> seen = world.runAll(
                    rank -> {
                        ParquetDataset data = ParquetDataset.open(
                                List.of(root + "/part-*.arrow"),
                                ColumnMapping.list("features", "label"),
                                Map.of("dfs.replication", "2"));
                        LoaderOptions options = new LoaderOptions()
                                .agreeOnErrors(world.group(rank))
                                .batchSize(10)
                                .seed(5)
                                .readers(2);
                        List<Integer> mine = new ArrayList<>();
                        for (int[] batch : ShardLoaderTest.epoch(data, options, DataPosition.start(0))) {
                            Arrays.stream(batch).forEach(mine::add);
                        }
                        return mine;
                    },
                    Duration.ofSeconds(120));
            List<Integer> both = new ArrayList<>(seen.get(0));
            both.addAll(seen.get(1));
            assertThat(both).hasSize(400).doesNotHaveDuplicates();
        } finally {
            cluster.shutdown();
        }
    }
}
