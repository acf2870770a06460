package dev.cohort.data;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.cohort.testkit.JvmWorkers;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.ipc.ArrowFileReader;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Each bad Arrow IPC input is a DataException naming the file, the record batch and the column. */
@Timeout(90)
class ArrowErrorsTest {

    private static final ColumnMapping MAPPING = ColumnMapping.list("features", "label");

    @TempDir
    Path dir;

    private String shards(String name, int rows) {
        return ArrowShards.write(dir.resolve(name).toString(), ArrowShards.lists(), rows, 10, ArrowShards::shardRow);
    }

    @Test
    void aMissingFileOrColumnIsNamed() {
        String missing = dir.resolve("nope.arrow").toString();
        assertThatThrownBy(() -> ParquetDataset.open(List.of(missing), MAPPING))
                .isInstanceOf(DataException.class)
                .hasMessageContaining(missing + ": no such file");
        String file = shards("a.arrow", 5);
        assertThatThrownBy(() -> ParquetDataset.open(List.of(file), ColumnMapping.list("pixels", "label")))
                .isInstanceOf(DataException.class)
                .hasMessageContaining(file + ", column 'pixels': no such column; the file has [features, label]")
                .satisfies(e -> assertThat(((DataException) e).column()).isEqualTo("pixels"));
        assertThatThrownBy(
                        () -> ParquetDataset.open(List.of(file), ColumnMapping.scalars(List.of("features"), "label")))
                .isInstanceOf(DataException.class)
                .hasMessageContaining("column 'features': is a list, but the mapping stacks scalar columns");
    }

    /** Variable-length lists {@code features} of floats, row i of {@code length(i)} values k, and a label i. */
    private String variableLists(String name, int rows, java.util.function.IntUnaryOperator length) {
        Schema schema = new Schema(List.of(
                ArrowShards.column("features", ArrowType.List.INSTANCE, ArrowShards.FLOAT),
                ArrowShards.column("label", ArrowShards.INT32, null)));
        return ArrowShards.write(dir.resolve(name).toString(), schema, rows, 10, (batch, r, i) -> {
            int at = ArrowShards.startList(batch, "features", r);
            Float4Vector values = (Float4Vector) ((ListVector) batch.getVector("features")).getDataVector();
            for (int k = 0; k < length.applyAsInt(i); k++) {
                values.setSafe(at + k, k);
            }
            ArrowShards.endList(batch, "features", r, length.applyAsInt(i));
            ((IntVector) batch.getVector("label")).setSafe(r, i);
        });
    }

    @Test
    void aListOfTheWrongLengthIsNamedWithItsRecordBatchAndRow() {
        String file = variableLists("a.arrow", 25, i -> i == 13 ? 2 : i == 14 ? 4 : 3); // batch 1 averages 3
        assertThatThrownBy(DataErrorsTest.firstBatch(file))
                .isInstanceOf(DataException.class)
                .hasMessageContaining(file + ", record batch 1, column 'features': row 3 holds a list of 2 numbers"
                        + " where the dataset's are of 3")
                .satisfies(e -> assertThat(((DataException) e).rowGroup()).isEqualTo(1));
        String uneven = variableLists("b.arrow", 20, i -> i == 15 ? 4 : 3);
        assertThatThrownBy(() -> ParquetDataset.open(List.of(uneven), MAPPING))
                .isInstanceOf(DataException.class)
                .hasMessageContaining(uneven + ", record batch 1, column 'features': lists of another length: 31"
                        + " values over 10 rows, where earlier record batches hold 3 per row");
    }

    /**
     * Writes {@link Shards}' 20 examples in record batches of 10, {@code nulling} applied to the row
     * of example {@code example}, and expects the first batch to fail with {@code message} after the
     * file's name.
     */
    private void assertNullNamed(
            String name, int example, BiConsumer<VectorSchemaRoot, Integer> nulling, String message) {
        String file = ArrowShards.write(dir.resolve(name).toString(), ArrowShards.lists(), 20, 10, (b, r, i) -> {
            ArrowShards.shardRow(b, r, i);
            if (i == example) {
                nulling.accept(b, r);
            }
        });
        assertThatThrownBy(DataErrorsTest.firstBatch(file))
                .isInstanceOf(DataException.class)
                .hasMessageContaining(file + message);
    }

    @Test
    void aNullIsNamedWithItsRecordBatchRowAndColumn() {
        assertNullNamed(
                "element.arrow",
                17,
                (b, r) -> ((FixedSizeListVector) b.getVector("features"))
                        .getDataVector()
                        .setNull(r * Shards.WIDTH + 2),
                ", record batch 1, column 'features': row 7 holds a null; every row needs 5 numbers");
        assertNullNamed(
                "list.arrow",
                5,
                (b, r) -> ((FixedSizeListVector) b.getVector("features")).setNull(r),
                ", record batch 0, column 'features': row 5 holds a null list");
        assertNullNamed(
                "label.arrow",
                4,
                (b, r) -> ((IntVector) b.getVector("label")).setNull(r),
                ", record batch 0, column 'label': row 4 of 10 is null");
    }

    /**
     * Zeroes the first bytes of record batch {@code b}'s metadata (its length reads as 0), and
     * deletes the checksums Hadoop's local file system wrote beside the file, which would catch it
     * first: as with a file another program wrote.
     */
    private static void corruptBatch(String file, int b) throws IOException {
        long offset;
        try (RootAllocator allocator = new RootAllocator();
                ArrowFileReader reader = new ArrowFileReader(Files.newByteChannel(Path.of(file)), allocator)) {
            offset = reader.getRecordBlocks().get(b).getOffset();
        }
        try (RandomAccessFile raw = new RandomAccessFile(file, "rw")) {
            raw.seek(offset);
            raw.write(new byte[8]);
        }
        Path crc = Path.of(file).resolveSibling("." + Path.of(file).getFileName() + ".crc");
        assertThat(Files.deleteIfExists(crc)).isTrue();
    }

    @Test
    void aTruncatedFileACorruptRecordBatchAndAVanishedFileAreNamed() throws IOException {
        String file = shards("a.arrow", 20);
        byte[] bytes = Files.readAllBytes(Path.of(file));
        String cut = dir.resolve("cut.arrow").toString();
        Files.write(Path.of(cut), Arrays.copyOf(bytes, bytes.length / 2));
        assertThatThrownBy(() -> ParquetDataset.open(List.of(cut), MAPPING))
                .isInstanceOf(DataException.class)
                .hasMessageContaining(cut + ": not an Arrow IPC file, or truncated");
        String parquet = Shards.write(dir.resolve("parquet"), 10, 10, 10).get(0);
        String misnamed = dir.resolve("parquet.arrow").toString();
        Files.copy(Path.of(parquet.replace("file:", "")), Path.of(misnamed));
        assertThatThrownBy(() -> ParquetDataset.open(List.of(misnamed), MAPPING))
                .isInstanceOf(DataException.class)
                .hasMessageContaining(misnamed + ": not an Arrow IPC file");

        String broken = shards("b.arrow", 20);
        corruptBatch(broken, 1);
        assertThatThrownBy(() -> ParquetDataset.open(List.of(broken), MAPPING))
                .isInstanceOf(DataException.class)
                .hasMessageContaining(broken + ", record batch 1: cannot read the record batch's metadata");

        DataErrorsTest.assertDamageNamed(
                ParquetDataset.open(List.of(file), MAPPING),
                file,
                () -> corruptBatch(file, 0),
                ", record batch 0: cannot read the record batch (corrupt or truncated)");
    }

    @Test
    void filesWithDifferentSchemasAreBothNamedWithTheColumn() {
        String a = shards("a.arrow", 5);
        Schema int64 = new Schema(List.of(
                ArrowShards.column("features", new ArrowType.FixedSizeList(Shards.WIDTH), ArrowShards.FLOAT),
                ArrowShards.column("label", ArrowShards.INT64, null)));
        String b = ArrowShards.write(dir.resolve("b.arrow").toString(), int64, 5, 10, (batch, r, i) -> {
            FixedSizeListVector f = (FixedSizeListVector) batch.getVector("features");
            f.startNewValue(r);
            ((org.apache.arrow.vector.BigIntVector) batch.getVector("label")).setSafe(r, i);
        });
        assertThatThrownBy(() -> ParquetDataset.open(List.of(a, b), MAPPING))
                .isInstanceOf(DataException.class)
                .hasMessageContaining(b + ", column 'label': the schema differs from file:" + a
                        + "'s: Int(64, true) here, Int(32, true) there");
    }

    @Test
    void aDatasetMixingParquetAndArrowFilesIsRefused() {
        Shards.write(dir, 10, 10, 10);
        String arrow = shards("extra.arrow", 5);
        assertThatThrownBy(() -> ParquetDataset.open(List.of(dir.toString()), MAPPING))
                .isInstanceOf(DataException.class)
                .hasMessageContaining("part-00000.parquet: a dataset is either Parquet or Arrow IPC files, and this"
                        + " one mixes them (file:" + arrow + " is Arrow IPC)");
    }

    @Test
    void aJvmWithoutTheAddOpensFlagIsToldWhichFlagToAdd() throws IOException {
        String file = shards("a.arrow", 5);
        List<JvmWorkers.Result> results = JvmWorkers.run(
                1,
                r -> JvmWorkers.javaCommand(OpenArrowWorker.class, List.of(), List.of(file)),
                r -> Map.of(),
                dir.resolve("logs"),
                Duration.ofSeconds(60));
        JvmWorkers.Result result = results.get(0);
        assertThat(result.exitCode()).as(JvmWorkers.describe(results)).isZero();
        assertThat(result.output())
                .as(JvmWorkers.describe(results))
                .contains("DATAERROR file:" + file
                        + ": Arrow's memory module cannot reach direct buffers in this JVM: start java with"
                        + " --add-opens=java.base/java.nio=ALL-UNNAMED");
    }

    /** Opens its argument as an Arrow dataset and prints the error, in a JVM started without the flag. */
    public static final class OpenArrowWorker {
        public static void main(String[] args) {
            try {
                ParquetDataset.open(List.of(args[0]), MAPPING);
                System.out.println("OPENED");
            } catch (DataException e) {
                System.out.println("DATAERROR " + e.getMessage());
            }
        }
    }
}
