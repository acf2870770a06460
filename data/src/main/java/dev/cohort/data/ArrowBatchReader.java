package dev.cohort.data;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.ipc.ArrowFileReader;
import org.apache.arrow.vector.ipc.message.ArrowBlock;

/**
 * Decodes whole record batches of a dataset's Arrow IPC files into primitive arrays: Arrow's
 * reader loads the batch's buffers, and the mapped columns' values are copied out of them through
 * a view of their memory (float columns in one bulk copy), never as boxed values. One per reader
 * thread: it keeps the last file open, and with it the last batch's buffers.
 */
final class ArrowBatchReader implements BlockReader {

    private final ParquetDataset dataset;
    private final BufferAllocator allocator;
    private ArrowFileReader open;
    private List<ArrowBlock> blocks;
    private int openFile = -1;

    ArrowBatchReader(ParquetDataset dataset) {
        this.dataset = dataset;
        this.allocator = ArrowFiles.allocator(dataset.files().get(0));
    }

    @Override
    public RowGroupReader.Decoded read(int g) {
        ParquetDataset.RowGroup batch = dataset.rowGroup(g);
        String file = dataset.files().get(batch.file());
        ArrowFileReader reader = reader(batch.file());
        VectorSchemaRoot root;
        try {
            reader.loadRecordBatch(blocks.get(batch.index()));
            root = reader.getVectorSchemaRoot();
        } catch (IOException | RuntimeException e) {
            throw new DataException(
                    file, batch.index(), null, "cannot read the record batch (corrupt or truncated): " + e, e);
        }
        if (root.getRowCount() != batch.rows()) {
            throw new DataException(
                    file,
                    batch.index(),
                    null,
                    "the record batch holds " + root.getRowCount() + " rows where its metadata said " + batch.rows()
                            + " when the dataset was opened (the file changed?)");
        }
        int rows = root.getRowCount();
        int width = dataset.width();
        float[] features = new float[Math.multiplyExact(rows, width)];
        long[] labels = new long[rows];
        ColumnMapping columns = dataset.columns;
        for (int c = 0; c < columns.featureColumns().size(); c++) {
            String column = columns.featureColumns().get(c);
            FieldVector vector = root.getVector(column);
            int at = c;
            decoding(file, batch, column, () -> {
                if (columns.stacked()) {
                    checkNoNull(vector, 0, rows, 1, file, batch, column);
                    copy(vector, 0, rows, features, at, width);
                } else {
                    readLists(vector, rows, width, features, file, batch, column);
                }
            });
        }
        String labelColumn = columns.labelColumn();
        FieldVector label = root.getVector(labelColumn);
        decoding(file, batch, labelColumn, () -> {
            checkNoNull(label, 0, rows, 1, file, batch, labelColumn);
            copyLabels(label, rows, labels);
        });
        return new RowGroupReader.Decoded(rows, features, labels);
    }

    /** Runs {@code decode}, which reads {@code column}; a failure other than a DataException becomes one. */
    private static void decoding(String file, ParquetDataset.RowGroup batch, String column, Runnable decode) {
        try {
            decode.run();
        } catch (RuntimeException e) {
            throw e instanceof DataException d
                    ? d
                    : new DataException(file, batch.index(), column, "cannot decode the column (corrupt?): " + e, e);
        }
    }

    /** A list column's rows, each {@code width} values: a fixed-size list's, or a list's of that length. */
    private static void readLists(
            FieldVector vector,
            int rows,
            int width,
            float[] features,
            String file,
            ParquetDataset.RowGroup batch,
            String column) {
        if (rows == 0) {
            return;
        }
        for (int row = 0; row < rows; row++) {
            if (vector.isNull(row)) {
                throw new DataException(
                        file,
                        batch.index(),
                        column,
                        "row " + row + " holds a null list; every row needs " + width + " numbers");
            }
        }
        FieldVector values;
        int start;
        if (vector instanceof FixedSizeListVector fixed) {
            values = fixed.getDataVector();
            start = 0;
        } else {
            ListVector list = (ListVector) vector;
            values = list.getDataVector();
            start = list.getElementStartIndex(0);
            for (int row = 0; row < rows; row++) {
                int length = list.getElementEndIndex(row) - list.getElementStartIndex(row);
                if (length != width) {
                    throw new DataException(
                            file,
                            batch.index(),
                            column,
                            "row " + row + " holds a list of " + length + " numbers where the dataset's are of "
                                    + width);
                }
            }
        }
        checkNoNull(values, start, rows * width, width, file, batch, column);
        copy(values, start, rows * width, features, 0, 1);
    }

    /** Throws naming the row of the first null among values [from, from + n), {@code perRow} values a row. */
    private static void checkNoNull(
            FieldVector values,
            int from,
            int n,
            int perRow,
            String file,
            ParquetDataset.RowGroup batch,
            String column) {
        if (values.getNullCount() == 0) {
            return;
        }
        for (int i = 0; i < n; i++) {
            if (values.isNull(from + i)) {
                throw new DataException(
                        file,
                        batch.index(),
                        column,
                        perRow == 1
                                ? "row " + i + " of " + n + " is null"
                                : "row " + i / perRow + " holds a null; every row needs " + perRow + " numbers");
            }
        }
    }

    /** The values [from, from + n) of a numeric vector's memory, seen in its byte order. */
    private static ByteBuffer memory(FieldVector values, int from, int n, int bytesPerValue) {
        return values.getDataBuffer()
                .nioBuffer((long) from * bytesPerValue, Math.multiplyExact(n, bytesPerValue))
                .order(ByteOrder.nativeOrder());
    }

    /** Values [from, from + n) of a numeric vector, as floats, into {@code out[at + i * stride]}. */
    private static void copy(FieldVector values, int from, int n, float[] out, int at, int stride) {
        if (n == 0) {
            return;
        }
        if (values instanceof Float4Vector) {
            FloatBuffer f = memory(values, from, n, Float.BYTES).asFloatBuffer();
            if (stride == 1) {
                f.get(out, at, n);
            } else {
                for (int i = 0; i < n; i++) {
                    out[at + i * stride] = f.get(i);
                }
            }
        } else if (values instanceof Float8Vector) {
            DoubleBuffer d = memory(values, from, n, Double.BYTES).asDoubleBuffer();
            for (int i = 0; i < n; i++) {
                out[at + i * stride] = (float) d.get(i);
            }
        } else if (values instanceof IntVector) {
            IntBuffer d = memory(values, from, n, Integer.BYTES).asIntBuffer();
            for (int i = 0; i < n; i++) {
                out[at + i * stride] = d.get(i);
            }
        } else if (values instanceof BigIntVector) {
            LongBuffer d = memory(values, from, n, Long.BYTES).asLongBuffer();
            for (int i = 0; i < n; i++) {
                out[at + i * stride] = d.get(i);
            }
        } else {
            throw new IllegalStateException("not a float, double, int32 or int64 vector: " + values.getField());
        }
    }

    private static void copyLabels(FieldVector label, int rows, long[] out) {
        if (rows == 0) {
            return;
        }
        if (label instanceof BigIntVector) {
            memory(label, 0, rows, Long.BYTES).asLongBuffer().get(out, 0, rows);
        } else if (label instanceof IntVector) {
            IntBuffer d = memory(label, 0, rows, Integer.BYTES).asIntBuffer();
            for (int i = 0; i < rows; i++) {
                out[i] = d.get(i);
            }
        } else {
            throw new IllegalStateException("not an int32 or int64 vector: " + label.getField());
        }
    }

    private ArrowFileReader reader(int file) {
        if (openFile != file) {
            closeFile();
            String name = dataset.files().get(file);
            open = ArrowFiles.open(ArrowFiles.channel(name, dataset.conf), name, allocator);
            blocks = ArrowFiles.blocks(open, name);
            openFile = file;
        }
        return open;
    }

    private void closeFile() {
        if (open != null) {
            ArrowFiles.closeQuietly(open);
            open = null;
            openFile = -1;
        }
    }

    @Override
    public void close() {
        closeFile();
        allocator.close();
    }
}
