package dev.cohort.spark.ml;

import dev.cohort.spark.RankFeed;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Iterator;
import org.apache.spark.ml.linalg.DenseVector;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.sql.Row;

/**
 * A task's rows to its rank ({@link ShardSpill} reads them): each row its label as an int32, then
 * its {@code width} features as float32, little-endian; rows of the prepared frame ({@code
 * CohortEstimator.fit}): the features as a vector, the label as a double.
 */
final class RowFeed implements RankFeed<Row> {

    private static final long serialVersionUID = 1L;

    private final int width;

    RowFeed(int width) {
        this.width = width;
    }

    @Override
    public void write(Iterator<Row> rows, OutputStream rank) throws IOException {
        int rowBytes = Integer.BYTES + width * Float.BYTES;
        int perChunk = Math.max(1, (1 << 18) / rowBytes);
        ByteBuffer chunk = ByteBuffer.allocate(perChunk * rowBytes).order(ByteOrder.LITTLE_ENDIAN);
        long index = 0;
        while (rows.hasNext()) {
            Row row = rows.next();
            Vector features = row.getAs(0);
            if (features.size() != width) {
                // The driver checked every row's width; a row that differs now means the input changed.
                throw new IllegalStateException("row " + index + " of this partition has " + features.size()
                        + " features, not " + width + " as the driver found: the input changed during fit");
            }
            double[] values = features instanceof DenseVector dense ? dense.values() : features.toArray();
            chunk.putInt((int) row.getDouble(1));
            for (int i = 0; i < width; i++) {
                chunk.putFloat((float) values[i]);
            }
            index++;
            if (!chunk.hasRemaining()) {
                rank.write(chunk.array(), 0, chunk.position());
                chunk.clear();
            }
        }
        rank.write(chunk.array(), 0, chunk.position());
    }
}
