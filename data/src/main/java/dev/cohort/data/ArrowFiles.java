package dev.cohort.data;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.apache.arrow.flatbuf.MessageHeader;
import org.apache.arrow.flatbuf.RecordBatch;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.ipc.ArrowFileReader;
import org.apache.arrow.vector.ipc.ReadChannel;
import org.apache.arrow.vector.ipc.message.ArrowBlock;
import org.apache.arrow.vector.ipc.message.MessageMetadataResult;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.hadoop.conf.Configuration;

/**
 * A dataset's Arrow IPC files (the Arrow "file" format, magic {@code ARROW1}, also called Feather
 * v2; named {@code *.arrow} or {@code *.feather}), read at {@link ParquetDataset#open} as Parquet
 * footers are: each file's footer gives its schema and the block of each record batch, and each
 * batch's own metadata (a few hundred bytes before its body) gives its rows and, for a column of
 * variable-length lists, its number of values; no batch body is read. The record batch is the unit
 * of sharding, as the row group is for Parquet.
 */
final class ArrowFiles {

    /** The flag without which Arrow cannot read a record batch's body (into a direct buffer) on JDK 17+. */
    static final String JVM_FLAG = "--add-opens=java.base/java.nio=ALL-UNNAMED";

    /**
     * What the footers say.
     *
     * @param width      the features' width, or -1 where a list column's batches hold no rows
     * @param batches    every file's record batches, in file order, numbered as row groups are
     * @param summaries  a line per file, for {@link ParquetDataset#describe}
     */
    record Footers(
            Schema schema,
            int width,
            boolean longLabels,
            List<ParquetDataset.RowGroup> batches,
            List<ParquetDataset.FileSummary> summaries) {}

    private ArrowFiles() {}

    /** Whether {@code file} is named as an Arrow IPC file. */
    static boolean named(String file) {
        String name = file.toLowerCase(Locale.ROOT);
        return name.endsWith(".arrow") || name.endsWith(".feather");
    }

    /**
     * Whether the dataset's files are Arrow IPC files (else Parquet).
     *
     * @throws DataException naming one file of each kind when they are mixed
     */
    static boolean all(List<String> files) {
        String arrow = files.stream().filter(ArrowFiles::named).findFirst().orElse(null);
        String other = files.stream().filter(f -> !named(f)).findFirst().orElse(null);
        if (arrow != null && other != null) {
            throw new DataException(
                    other,
                    -1,
                    null,
                    "a dataset is either Parquet or Arrow IPC files, and this one mixes them (" + arrow
                            + " is Arrow IPC): convert one kind, or open them as two datasets");
        }
        return arrow != null;
    }

    /**
     * An allocator for reading {@code file}, once Arrow's memory module proved it can reach direct
     * buffers in this JVM.
     *
     * @throws DataException naming {@link #JVM_FLAG} where the JVM was started without it
     */
    static BufferAllocator allocator(String file) {
        BufferAllocator allocator = new RootAllocator();
        try (ArrowBuf probe = allocator.buffer(Long.BYTES)) {
            probe.nioBuffer(0, Long.BYTES);
        } catch (UnsupportedOperationException e) {
            allocator.close();
            throw new DataException(
                    file,
                    -1,
                    null,
                    "Arrow's memory module cannot reach direct buffers in this JVM: start java with " + JVM_FLAG + " ("
                            + e.getMessage() + ")",
                    e);
        }
        return allocator;
    }

    /** {@code file} as a channel of its file system. */
    static HadoopReadChannel channel(String file, Configuration conf) {
        try {
            return HadoopReadChannel.open(file, conf);
        } catch (FileNotFoundException e) {
            throw new DataException(file, -1, null, "no such file", e);
        } catch (IOException | RuntimeException e) {
            throw new DataException(file, -1, null, "cannot open it: " + e, e);
        }
    }

    /** A reader of {@code channel} (the file {@code file}), its footer read. */
    static ArrowFileReader open(HadoopReadChannel channel, String file, BufferAllocator allocator) {
        ArrowFileReader reader = new ArrowFileReader(channel, allocator);
        try {
            reader.getVectorSchemaRoot();
            return reader;
        } catch (IOException | RuntimeException e) {
            closeQuietly(reader);
            throw new DataException(
                    file, -1, null, "not an Arrow IPC file, or truncated (its footer cannot be read): " + e, e);
        }
    }

    /** The schema of a reader {@link #open} returned. */
    static Schema schema(ArrowFileReader reader, String file) {
        try {
            return reader.getVectorSchemaRoot().getSchema();
        } catch (IOException e) {
            throw new DataException(file, -1, null, "cannot read the schema: " + e, e);
        }
    }

    static void closeQuietly(ArrowFileReader reader) {
        try {
            reader.close();
        } catch (IOException | RuntimeException e) {
            // closing only releases the stream and the last batch's buffers: nothing to recover
        }
    }

    /**
     * Reads every file's footer and record batch metadata.
     *
     * @throws DataException naming the file (record batch, column) as for Parquet footers
     */
    static Footers read(List<String> files, ColumnMapping columns, Configuration conf) {
        Schema schema = null;
        int width = columns.stacked() ? columns.featureColumns().size() : -1;
        List<ParquetDataset.RowGroup> batches = new ArrayList<>();
        List<ParquetDataset.FileSummary> summaries = new ArrayList<>();
        long first = 0;
        int listValues = -1;
        try (BufferAllocator allocator = allocator(files.get(0))) {
            for (int f = 0; f < files.size(); f++) {
                String file = files.get(f);
                HadoopReadChannel channel = channel(file, conf);
                ArrowFileReader reader = open(channel, file, allocator);
                try {
                    Schema fileSchema = schema(reader, file);
                    if (schema == null) {
                        schema = fileSchema;
                        width = checkColumns(schema, columns, file, width);
                        listValues = listValuesNode(schema, columns, file);
                    } else {
                        checkSameSchema(files.get(0), schema, file, fileSchema);
                    }
                    List<ArrowBlock> blocks = blocks(reader, file);
                    long fileRows = 0;
                    long fileBytes = 0;
                    for (int b = 0; b < blocks.size(); b++) {
                        RecordBatch batch = metadata(channel, blocks.get(b), file, b);
                        long rows = batch.length();
                        if (listValues >= 0 && rows > 0) {
                            long values = batch.nodes(listValues).length();
                            width = listWidth(file, b, columns.featureColumns().get(0), values, rows, width);
                        }
                        batches.add(new ParquetDataset.RowGroup(f, b, rows, first));
                        first += rows;
                        fileRows += rows;
                        fileBytes += blocks.get(b).getMetadataLength()
                                + blocks.get(b).getBodyLength();
                    }
                    summaries.add(new ParquetDataset.FileSummary(file, blocks.size(), fileRows, fileBytes));
                } finally {
                    closeQuietly(reader);
                }
            }
        }
        Field label = field(schema, columns.labelColumn(), files.get(0));
        boolean longLabels = ((ArrowType.Int) label.getType()).getBitWidth() == 64;
        return new Footers(schema, width, longLabels, batches, summaries);
    }

    static List<ArrowBlock> blocks(ArrowFileReader reader, String file) {
        try {
            return reader.getRecordBlocks();
        } catch (IOException | RuntimeException e) {
            throw new DataException(file, -1, null, "cannot read the footer's record batches: " + e, e);
        }
    }

    /** The metadata of a record batch (its rows, and each column's values and nulls), without its body. */
    private static RecordBatch metadata(HadoopReadChannel channel, ArrowBlock block, String file, int b) {
        RecordBatch batch;
        try {
            channel.position(block.getOffset());
            MessageMetadataResult message = MessageSerializer.readMessage(new ReadChannel(channel));
            if (message == null || message.headerType() != MessageHeader.RecordBatch) {
                throw new IOException("no record batch at offset " + block.getOffset());
            }
            batch = (RecordBatch) message.getMessage().header(new RecordBatch());
        } catch (IOException | RuntimeException e) {
            throw new DataException(
                    file, b, null, "cannot read the record batch's metadata (corrupt or truncated): " + e, e);
        }
        return batch;
    }

    /** The field node of a variable-length list column's values, or -1 (scalars, fixed-size lists). */
    private static int listValuesNode(Schema schema, ColumnMapping columns, String file) {
        String column = columns.featureColumns().get(0);
        boolean variable = !columns.stacked() && field(schema, column, file).getType() instanceof ArrowType.List;
        return variable ? nodeIndex(schema, column) + 1 : -1;
    }

    /** The index of {@code column}'s node among a record batch's field nodes: the fields depth first. */
    private static int nodeIndex(Schema schema, String column) {
        int index = 0;
        for (Field f : schema.getFields()) {
            if (f.getName().equals(column)) {
                return index;
            }
            index += nodes(f);
        }
        throw new IllegalStateException("no column " + column);
    }

    private static int nodes(Field field) {
        int n = 1;
        for (Field child : field.getChildren()) {
            n += nodes(child);
        }
        return n;
    }

    private static int listWidth(String file, int b, String column, long values, long rows, int width) {
        if (values % rows != 0 || (width >= 0 && values / rows != width)) {
            throw new DataException(
                    file,
                    b,
                    column,
                    "lists of another length: " + values + " values over " + rows + " rows"
                            + (width >= 0 ? ", where earlier record batches hold " + width + " per row" : "")
                            + "; the features must be lists of one length");
        }
        return (int) (values / rows);
    }

    /** Checks the mapped columns' types; returns the width a fixed-size list column gives ({@code width} else). */
    private static int checkColumns(Schema schema, ColumnMapping columns, String file, int width) {
        for (String c : columns.featureColumns()) {
            Field field = field(schema, c, file);
            ArrowType type = field.getType();
            boolean list = type instanceof ArrowType.List || type instanceof ArrowType.FixedSizeList;
            if (list != !columns.stacked()) {
                throw new DataException(
                        file,
                        -1,
                        c,
                        columns.stacked()
                                ? "is a list, but the mapping stacks scalar columns: map it with ColumnMapping.list"
                                : "is not a list of numbers (" + type
                                        + "): map scalar columns with ColumnMapping.scalars");
            }
            Field values = list ? field.getChildren().get(0) : field;
            if (!number(values.getType(), true)) {
                throw new DataException(
                        file, -1, c, "holds " + values.getType() + "; features must be float, double, int32 or int64");
            }
            if (type instanceof ArrowType.FixedSizeList fixed) {
                width = fixed.getListSize();
            }
        }
        Field label = field(schema, columns.labelColumn(), file);
        if (!number(label.getType(), false)) {
            throw new DataException(
                    file, -1, columns.labelColumn(), "holds " + label.getType() + "; a label must be int32 or int64");
        }
        return width;
    }

    private static boolean number(ArrowType type, boolean feature) {
        if (type instanceof ArrowType.Int i) {
            return i.getIsSigned() && (i.getBitWidth() == 32 || i.getBitWidth() == 64);
        }
        return feature
                && type instanceof ArrowType.FloatingPoint fp
                && (fp.getPrecision() == FloatingPointPrecision.SINGLE
                        || fp.getPrecision() == FloatingPointPrecision.DOUBLE);
    }

    /** The top-level field {@code column}, which must not be dictionary-encoded. */
    static Field field(Schema schema, String column, String file) {
        for (Field f : schema.getFields()) {
            if (f.getName().equals(column)) {
                if (f.getDictionary() != null) {
                    throw new DataException(file, -1, column, "is dictionary-encoded; Cohort reads plain numbers");
                }
                return f;
            }
        }
        throw new DataException(file, -1, column, "no such column; the file has " + names(schema));
    }

    private static List<String> names(Schema schema) {
        return schema.getFields().stream().map(Field::getName).toList();
    }

    private static void checkSameSchema(String firstFile, Schema first, String file, Schema other) {
        for (Field f : first.getFields()) {
            Field match = other.getFields().stream()
                    .filter(x -> x.getName().equals(f.getName()))
                    .findFirst()
                    .orElse(null);
            if (match == null) {
                throw new DataException(
                        file,
                        -1,
                        f.getName(),
                        "the schema differs from " + firstFile + "'s: the column is missing here");
            }
            if (!type(match).equals(type(f))) {
                throw new DataException(
                        file,
                        -1,
                        f.getName(),
                        "the schema differs from " + firstFile + "'s: " + type(match) + " here, " + type(f) + " there");
            }
        }
        for (Field f : other.getFields()) {
            if (first.getFields().stream().noneMatch(x -> x.getName().equals(f.getName()))) {
                throw new DataException(
                        file, -1, f.getName(), "the schema differs from " + firstFile + "'s: the column is not there");
            }
        }
    }

    /** A field's type with its children's, without names or nullability: what must match between files. */
    private static String type(Field field) {
        if (field.getChildren().isEmpty()) {
            return field.getType().toString();
        }
        return field.getType() + "<"
                + String.join(
                        ", ", field.getChildren().stream().map(ArrowFiles::type).toList()) + ">";
    }
}
