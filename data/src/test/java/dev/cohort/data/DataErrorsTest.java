package dev.cohort.data;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.function.BiConsumer;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.example.data.Group;
import org.apache.parquet.example.data.simple.SimpleGroupFactory;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.example.ExampleParquetWriter;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.hadoop.util.HadoopOutputFile;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.MessageTypeParser;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(60)
class DataErrorsTest {

    private static final ColumnMapping MAPPING = ColumnMapping.list("features", "label");
    private static final String LISTS = "message m { required group features (LIST) { repeated group list {"
            + " optional float element; } } optional int32 label; }";

    @TempDir
    Path dir;

    private String write(String name, String schema, int rows, BiConsumer<Group, Integer> fill) throws IOException {
        return write(dir, name, schema, rows, fill);
    }

    /** Writes {@code rows} rows of {@code schema} to {@code dir/name} in row groups of 10, row i filled by {@code fill(row, i)}. */
    static String write(Path dir, String name, String schema, int rows, BiConsumer<Group, Integer> fill)
            throws IOException {
        MessageType type = MessageTypeParser.parseMessageType(schema);
        SimpleGroupFactory groups = new SimpleGroupFactory(type);
        org.apache.hadoop.fs.Path file =
                new org.apache.hadoop.fs.Path(dir.resolve(name).toString());
        try (ParquetWriter<Group> writer = ExampleParquetWriter.builder(
                        HadoopOutputFile.fromPath(file, new Configuration()))
                .withType(type)
                .withCompressionCodec(CompressionCodecName.UNCOMPRESSED)
                .withRowGroupRowCountLimit(10)
                .build()) {
            for (int i = 0; i < rows; i++) {
                Group g = groups.newGroup();
                fill.accept(g, i);
                writer.write(g);
            }
        }
        return file.toString();
    }

    private static void list(Group row, int length, boolean withNull) {
        Group list = row.addGroup("features");
        for (int k = 0; k < length; k++) {
            Group element = list.addGroup("list");
            if (!(withNull && k == 2)) {
                element.append("element", (float) k);
            }
        }
    }

    /** The first batch's failure: what a training thread sees (Parquet or Arrow files alike). */
    static ThrowingCallable firstBatch(String file) {
        return () -> {
            ParquetDataset data = ParquetDataset.open(List.of(file), MAPPING);
            try (ShardLoader loader =
                    data.loader(new LoaderOptions().shuffleBuffer(0).batchSize(100), DataPosition.start(0))) {
                loader.next();
            }
        };
    }

    @Test
    void aMissingFileOrColumnIsNamed() throws IOException {
        String missing = dir.resolve("nope.parquet").toString();
        assertThatThrownBy(() -> ParquetDataset.open(List.of(missing), MAPPING))
                .isInstanceOf(DataException.class)
                .hasMessageContaining(missing)
                .hasMessageContaining("no such file");
        String file = write("a.parquet", LISTS, 5, (row, i) -> {
            list(row, 3, false);
            row.append("label", i);
        });
        assertThatThrownBy(() -> ParquetDataset.open(List.of(file), ColumnMapping.list("pixels", "label")))
                .isInstanceOf(DataException.class)
                .hasMessageContaining(file)
                .hasMessageContaining("column 'pixels': no such column; the file has [features, label]")
                .satisfies(e -> assertThat(((DataException) e).column()).isEqualTo("pixels"));
    }

    @Test
    void aListOfTheWrongLengthIsNamedWithItsRowGroupAndRow() throws IOException {
        String file = write("a.parquet", LISTS, 25, (row, i) -> {
            list(row, i == 13 ? 2 : i == 14 ? 4 : 3, false); // row group 1 averages 3 per row
            row.append("label", i);
        });
        assertThatThrownBy(firstBatch(file))
                .isInstanceOf(DataException.class)
                .hasMessageContaining(
                        file
                                + ", row group 1, column 'features': row 3 holds a list of 2 numbers where the dataset's are of 3")
                .satisfies(e -> assertThat(((DataException) e).rowGroup()).isEqualTo(1));
        String uneven = write("b.parquet", LISTS, 20, (row, i) -> {
            list(row, i == 15 ? 4 : 3, false);
            row.append("label", i);
        });
        assertThatThrownBy(() -> ParquetDataset.open(List.of(uneven), MAPPING))
                .isInstanceOf(DataException.class)
                .hasMessageContaining(uneven + ", row group 1, column 'features': lists of another length");
    }

    @Test
    void aNullIsNamedWithItsRowGroupAndColumn() throws IOException {
        String element = write("a.parquet", LISTS, 20, (row, i) -> {
            list(row, 3, i == 17);
            row.append("label", i);
        });
        assertThatThrownBy(firstBatch(element))
                .isInstanceOf(DataException.class)
                .hasMessageContaining(element + ", row group 1, column 'features': row 7 holds a null");
        String label = write("b.parquet", LISTS, 20, (row, i) -> {
            list(row, 3, false);
            if (i != 4) {
                row.append("label", i);
            }
        });
        assertThatThrownBy(firstBatch(label))
                .isInstanceOf(DataException.class)
                .hasMessageContaining(label + ", row group 0, column 'label': row 4 of 10 is null");
    }

    @Test
    void aCorruptRowGroupATruncatedFileAndAVanishedFileAreNamed() throws IOException {
        String file = write("a.parquet", LISTS, 20, (row, i) -> {
            list(row, 3, false);
            row.append("label", i);
        });
        byte[] bytes = Files.readAllBytes(Path.of(file));
        Files.write(dir.resolve("cut.parquet"), java.util.Arrays.copyOf(bytes, bytes.length / 2));
        String cut = dir.resolve("cut.parquet").toString();
        assertThatThrownBy(() -> ParquetDataset.open(List.of(cut), MAPPING))
                .isInstanceOf(DataException.class)
                .hasMessageContaining(cut + ": not a Parquet file, or truncated");

        assertDamageNamed(
                ParquetDataset.open(List.of(file), MAPPING),
                file,
                () -> Shards.corruptFirstPage(file),
                ", row group 0");
    }

    /** Damages a file, as a corruption on disk does. */
    interface Damage {
        void apply() throws IOException;
    }

    /**
     * After {@code damage} to {@code file}, which {@code data} holds 20 examples of, the first batch
     * fails with {@code where} after the file's name; once the file is deleted, with its name; and no
     * loader thread is left.
     */
    static void assertDamageNamed(ParquetDataset data, String file, Damage damage, String where) throws IOException {
        damage.apply();
        try (ShardLoader loader =
                data.loader(new LoaderOptions().shuffleBuffer(0).batchSize(20), DataPosition.start(0))) {
            assertThatThrownBy(loader::next)
                    .isInstanceOf(DataException.class)
                    .hasMessageContaining(file + where)
                    .satisfies(e -> assertThat(((DataException) e).file()).isEqualTo("file:" + file));
        }
        Files.delete(Path.of(file));
        try (ShardLoader loader = data.loader(new LoaderOptions().batchSize(20), DataPosition.start(0))) {
            assertThatThrownBy(loader::next).isInstanceOf(DataException.class).hasMessageContaining(file);
        }
        assertThat(ShardLoaderTest.dataThreads()).isEmpty();
    }

    @Test
    void filesWithDifferentSchemasAreBothNamedWithTheColumn() throws IOException {
        String a = write("a.parquet", LISTS, 5, (row, i) -> {
            list(row, 3, false);
            row.append("label", i);
        });
        String b = write("b.parquet", LISTS.replace("optional int32 label", "optional int64 label"), 5, (row, i) -> {
            list(row, 3, false);
            row.append("label", (long) i);
        });
        assertThatThrownBy(() -> ParquetDataset.open(List.of(a, b), MAPPING))
                .isInstanceOf(DataException.class)
                .hasMessageContaining(b + ", column 'label': the schema differs from file:" + a + "'s")
                .hasMessageContaining("int64")
                .hasMessageContaining("int32");
    }
}
