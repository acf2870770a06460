package dev.cohort.data;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.bytes.HeapByteBufferAllocator;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.column.ParquetProperties.WriterVersion;
import org.apache.parquet.column.page.PageReadStore;
import org.apache.parquet.column.values.rle.RunLengthBitPackingHybridEncoder;
import org.apache.parquet.example.data.Group;
import org.apache.parquet.example.data.simple.SimpleGroupFactory;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.example.ExampleParquetWriter;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.parquet.hadoop.util.HadoopOutputFile;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.MessageTypeParser;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The bulk decoder against what was written, over the layouts Parquet's writers make: pages of
 * format 1 and 2, dictionary and plain values, float, double and int elements, rows cut across
 * pages; and its RLE/bit-packed hybrid against Parquet's own encoder at every bit width.
 */
@Timeout(60)
class ChunkDecoderTest {

    private static final int WIDTH = 7;
    private static final int ROWS = 3_000;

    @TempDir
    Path dir;

    static Stream<Arguments> layouts() {
        List<Arguments> all = new ArrayList<>();
        for (WriterVersion version : WriterVersion.values()) {
            for (boolean dictionary : new boolean[] {true, false}) {
                for (String type : List.of("float", "double", "int32")) {
                    all.add(Arguments.of(version, dictionary, type));
                }
            }
        }
        return all.stream();
    }

    /** Row i's value k: few distinct values when {@code dictionary}, so the writer keeps a dictionary. */
    private static double value(int i, int k, boolean dictionary) {
        return dictionary ? (i * 7 + k) % 50 : i * 10 + k;
    }

    private String write(WriterVersion version, boolean dictionary, String type, boolean optional) throws IOException {
        String element = (optional ? "optional " : "required ") + type + " element;";
        MessageType schema = MessageTypeParser.parseMessageType("message m { required group features (LIST) {"
                + " repeated group list { " + element + " } } required int64 label; }");
        SimpleGroupFactory groups = new SimpleGroupFactory(schema);
        org.apache.hadoop.fs.Path file =
                new org.apache.hadoop.fs.Path(dir.resolve(version + "-" + dictionary + "-" + type + ".parquet")
                        .toString());
        try (ParquetWriter<Group> writer = ExampleParquetWriter.builder(
                        HadoopOutputFile.fromPath(file, new Configuration()))
                .withType(schema)
                .withWriterVersion(version)
                .withDictionaryEncoding(dictionary)
                .withCompressionCodec(CompressionCodecName.SNAPPY)
                // Optional elements: many small pages a row group, rows cut across them. Required
                // ones: a page a row group, of more values than the decoder's stretch.
                .withPageSize(optional ? 1024 : 1 << 20)
                .withPageRowCountLimit(optional ? 100 : 1_000)
                .withRowGroupRowCountLimit(1_000)
                .build()) {
            for (int i = 0; i < ROWS; i++) {
                Group row = groups.newGroup();
                Group list = row.addGroup("features");
                for (int k = 0; k < WIDTH; k++) {
                    double v = value(i, k, dictionary);
                    Group e = list.addGroup("list");
                    switch (type) {
                        case "float" -> e.append("element", (float) v);
                        case "double" -> e.append("element", v);
                        default -> e.append("element", (int) v);
                    }
                }
                row.append("label", (long) i * 3);
                writer.write(row);
            }
        }
        return file.toString();
    }

    @ParameterizedTest(name = "{0}, dictionary {1}, {2}")
    @MethodSource("layouts")
    void theLoaderReadsWhatWasWritten(WriterVersion version, boolean dictionary, String type) throws IOException {
        String file = write(version, dictionary, type, true);
        ParquetDataset data = ParquetDataset.open(List.of(file), ColumnMapping.list("features", "label"));
        int seen = 0;
        try (ShardLoader loader =
                data.loader(new LoaderOptions().shuffleBuffer(0).batchSize(128), DataPosition.start(0))) {
            while (loader.hasNext()) {
                Batch batch = loader.next();
                for (int r = 0; r < batch.rows(); r++) {
                    int i = (int) (batch.longLabels().get(r) / 3);
                    for (int k = 0; k < WIDTH; k++) {
                        assertThat(batch.features().get(r * WIDTH + k))
                                .as("row %d value %d", i, k)
                                .isEqualTo((float) value(i, k, dictionary));
                    }
                    seen++;
                }
            }
        }
        assertThat(seen).isEqualTo(ROWS);
    }

    /** The chunks the footer admits decode in bulk (not only through the ColumnReader fallback). */
    @ParameterizedTest(name = "{0}, dictionary {1}, {2}")
    @MethodSource("layouts")
    void chunksWithPlainOrDictionaryValuesDecodeInBulk(WriterVersion version, boolean dictionary, String type)
            throws Exception {
        String file = write(version, dictionary, type, false);
        try (ParquetFileReader reader = ParquetFileReader.open(
                HadoopInputFile.fromPath(new org.apache.hadoop.fs.Path(file), new Configuration()))) {
            MessageType schema = reader.getFooter().getFileMetaData().getSchema();
            ColumnDescriptor features = schema.getColumns().get(0);
            boolean bulk = ChunkDecoder.decodes(
                    reader.getRowGroups().get(0).getColumns().get(0), features);
            // Parquet's format-2 writer stores ints without a dictionary as DELTA_BINARY_PACKED: the fallback's
            boolean delta = version == WriterVersion.PARQUET_2_0 && !dictionary && type.equals("int32");
            assertThat(bulk).as("decoded in bulk").isEqualTo(!delta);
            if (!bulk) {
                return;
            }
            ChunkDecoder decoder = new ChunkDecoder();
            float[] out = new float[1_000 * WIDTH];
            PageReadStore pages = reader.readRowGroup(1);
            decoder.decode(
                    pages.getPageReader(features),
                    features,
                    1_000,
                    WIDTH,
                    false,
                    (d, first, count) -> System.arraycopy(d.floats, 0, out, first, count),
                    new ChunkDecoder.Where(file, 1, "features"));
            for (int r = 0; r < 1_000; r++) {
                for (int k = 0; k < WIDTH; k++) {
                    assertThat(out[r * WIDTH + k]).isEqualTo((float) value(1_000 + r, k, dictionary));
                }
            }
            assertThatThrownBy(() -> decoder.decode(
                            reader.readRowGroup(2).getPageReader(features),
                            features,
                            999,
                            WIDTH,
                            false,
                            (d, first, count) -> {},
                            new ChunkDecoder.Where(file, 2, "features")))
                    .isInstanceOf(DataException.class)
                    .hasMessageContaining(
                            "row group 2, column 'features': the column holds more rows than the footer's 999");
        }
    }

    @Test
    void theHybridDecoderReadsParquetsEncodingAtEveryBitWidth() throws IOException {
        Random random = new Random(3);
        for (int bitWidth = 0; bitWidth <= 32; bitWidth++) {
            int n = 1_000 + random.nextInt(100);
            int[] values = new int[n];
            for (int i = 0; i < n; i++) {
                int v = bitWidth == 0 ? 0 : (int) (random.nextLong() >>> (64 - bitWidth));
                values[i] = i % 3 == 0 && i > 0 ? values[i - 1] : v; // runs and scattered values
            }
            for (int i = 200; i < 400; i++) {
                values[i] = values[199]; // a long run: RLE
            }
            RunLengthBitPackingHybridEncoder encoder =
                    new RunLengthBitPackingHybridEncoder(bitWidth, 64, 1 << 16, HeapByteBufferAllocator.getInstance());
            for (int v : values) {
                encoder.writeInt(v);
            }
            ByteBuffer heap = encoder.toBytes().toByteBuffer();
            ByteBuffer direct = ByteBuffer.allocateDirect(heap.remaining())
                    .put(heap.duplicate())
                    .flip();
            for (ByteBuffer bytes : List.of(heap, direct)) {
                for (int stretch : new int[] {n, 37, 1}) { // runs cut anywhere
                    int[] decoded = new int[n];
                    ChunkDecoder.hybrid(bytes.duplicate(), bitWidth, decoded, n, stretch);
                    assertThat(decoded)
                            .as("bit width %d, direct %s, stretches of %d", bitWidth, bytes.isDirect(), stretch)
                            .containsExactly(values);
                }
            }
        }
    }
}
