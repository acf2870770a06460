package dev.cohort.spark.ml;

import dev.cohort.data.ShardWriter;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;

/**
 * A rank's side of {@link RowFeed}: reads its task's rows to their end and writes them to Parquet
 * files in a local directory (row groups of {@value #ROWS_PER_ROW_GROUP} rows, so that each
 * epoch's shuffle of row groups mixes well), which the rank's loader then streams each epoch: the
 * rank's memory holds a few row groups, never its whole shard.
 */
final class ShardSpill {

    /** Rows per row group of the spilled shard. */
    static final int ROWS_PER_ROW_GROUP = 1024;

    private ShardSpill() {}

    /**
     * Reads rows of {@code width} features from {@code in} into {@code directory}; returns how many.
     *
     * @throws IOException when the input ends inside a row (the task stopped writing)
     */
    static long spill(InputStream in, int width, int classes, Path directory) throws IOException {
        DataInputStream data = new DataInputStream(in);
        int rowBytes = Integer.BYTES + width * Float.BYTES;
        int perChunk = ROWS_PER_ROW_GROUP;
        byte[] raw = new byte[perChunk * rowBytes];
        ByteBuffer view = ByteBuffer.wrap(raw).order(ByteOrder.LITTLE_ENDIAN);
        float[] features = new float[perChunk * width];
        int[] labels = new int[perChunk];
        long rows = 0;
        ShardWriter.Output out = ShardWriter.to(directory.toString())
                .rowsPerRowGroup(ROWS_PER_ROW_GROUP)
                .rowsPerFile(Integer.MAX_VALUE)
                .open(width);
        try {
            while (true) {
                int got = readRows(data, raw, rowBytes);
                if (got == 0) {
                    break;
                }
                view.clear();
                for (int r = 0; r < got; r++) {
                    int label = view.getInt();
                    if (label < 0 || label >= classes) {
                        throw new IllegalStateException("row " + (rows + r) + " of this rank's shard has label " + label
                                + ", outside 0.." + (classes - 1) + " as the driver found");
                    }
                    labels[r] = label;
                    view.asFloatBuffer().get(features, r * width, width);
                    view.position(view.position() + width * Float.BYTES);
                }
                out.append(features, labels, got);
                rows += got;
            }
            out.finish();
            return rows;
        } finally {
            out.close();
        }
    }

    /** Fills {@code raw} with whole rows; returns how many (0 at the end of the input). */
    private static int readRows(DataInputStream in, byte[] raw, int rowBytes) throws IOException {
        int filled = 0;
        while (filled < raw.length) {
            int n = in.read(raw, filled, raw.length - filled);
            if (n < 0) {
                break;
            }
            filled += n;
        }
        if (filled % rowBytes != 0) {
            throw new EOFException("the task's rows ended inside a row (" + filled % rowBytes + " of " + rowBytes
                    + " bytes): the task stopped writing");
        }
        return filled / rowBytes;
    }
}
