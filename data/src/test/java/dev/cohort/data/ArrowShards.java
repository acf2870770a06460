package dev.cohort.data;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.compression.CompressionCodec;
import org.apache.arrow.vector.compression.CompressionUtil.CodecType;
import org.apache.arrow.vector.ipc.ArrowFileWriter;
import org.apache.arrow.vector.ipc.message.IpcOption;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

/**
 * Arrow IPC test files written with Arrow's own {@link ArrowFileWriter}, through Hadoop's file
 * system (local or {@code hdfs://}). {@link #write(String, int, int, int)} writes {@link Shards}'
 * examples: example i has label i and features i + k / 1000.
 */
final class ArrowShards {

    static final ArrowType FLOAT = new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE);
    static final ArrowType DOUBLE = new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE);
    static final ArrowType INT32 = new ArrowType.Int(32, true);
    static final ArrowType INT64 = new ArrowType.Int(64, true);

    /** Fills row {@code r} of a record batch with example {@code example}. */
    interface Row {
        void fill(VectorSchemaRoot batch, int r, int example);
    }

    private ArrowShards() {}

    /** A nullable column {@code name} of {@code type}; a list type's element is a nullable {@code element}. */
    static Field column(String name, ArrowType type, ArrowType element) {
        List<Field> children = element == null ? List.of() : List.of(Field.nullable("element", element));
        return new Field(name, FieldType.nullable(type), children);
    }

    /** The default schema: a fixed-size list {@code features} of {@link Shards#WIDTH} floats and an int32 {@code label}. */
    static Schema lists() {
        return new Schema(List.of(
                column("features", new ArrowType.FixedSizeList(Shards.WIDTH), FLOAT), column("label", INT32, null)));
    }

    /** Row {@code r} of the default schema: {@link Shards}' example. */
    static void shardRow(VectorSchemaRoot batch, int r, int example) {
        FixedSizeListVector features = (FixedSizeListVector) batch.getVector("features");
        int at = features.startNewValue(r);
        for (int k = 0; k < Shards.WIDTH; k++) {
            ((Float4Vector) features.getDataVector()).setSafe(at + k, Shards.feature(example, k));
        }
        ((IntVector) batch.getVector("label")).setSafe(r, example);
    }

    /** Starts row {@code r} of a list column and returns where its values go; {@link #endList} ends it. */
    static int startList(VectorSchemaRoot batch, String column, int r) {
        return ((ListVector) batch.getVector(column)).startNewValue(r);
    }

    static void endList(VectorSchemaRoot batch, String column, int r, int length) {
        ((ListVector) batch.getVector(column)).endValue(r, length);
    }

    /**
     * Writes examples 0 to {@code examples - 1} into {@code dir/part-NNNNN.arrow}, {@code rowsPerFile}
     * to a file in record batches of {@code rowsPerBatch}.
     */
    static List<String> write(String dir, int examples, int rowsPerBatch, int rowsPerFile) {
        List<String> files = new ArrayList<>();
        for (int from = 0; from < examples; from += rowsPerFile) {
            String file = dir + String.format("/part-%05d.arrow", files.size());
            int first = from;
            write(
                    file,
                    lists(),
                    Math.min(rowsPerFile, examples - from),
                    rowsPerBatch,
                    (batch, r, i) -> shardRow(batch, r, first + i));
            files.add(file);
        }
        return files;
    }

    /** Writes rows 0 to {@code rows - 1} of {@code schema} into {@code file} in record batches of {@code rowsPerBatch}. */
    static String write(String file, Schema schema, int rows, int rowsPerBatch, Row row) {
        return write(
                file, schema, rows, rowsPerBatch, row, CompressionCodec.Factory.INSTANCE, CodecType.NO_COMPRESSION);
    }

    /** As {@link #write(String, Schema, int, int, Row)}, each batch's buffers compressed by {@code codecs}' {@code codec}. */
    static String write(
            String file,
            Schema schema,
            int rows,
            int rowsPerBatch,
            Row row,
            CompressionCodec.Factory codecs,
            CodecType codec) {
        try (BufferAllocator allocator = new RootAllocator();
                VectorSchemaRoot batch = VectorSchemaRoot.create(schema, allocator);
                OutputStream out =
                        new Path(file).getFileSystem(new Configuration()).create(new Path(file));
                ArrowFileWriter writer = new ArrowFileWriter(
                        batch, null, Channels.newChannel(out), Map.of(), IpcOption.DEFAULT, codecs, codec)) {
            writer.start();
            for (int from = 0; from < rows; from += rowsPerBatch) {
                int n = Math.min(rowsPerBatch, rows - from);
                batch.allocateNew();
                for (int r = 0; r < n; r++) {
                    row.fill(batch, r, from + r);
                }
                batch.setRowCount(n);
                writer.writeBatch();
            }
            writer.end();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        return file;
    }
}
