package dev.cohort.data;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;

/**
 * A batch of examples in native memory: {@code rows x width} features (row after row) and one
 * label per row, as direct buffers in the platform's byte order, ready to wrap as tensors. A
 * loader reuses its batches' memory: a batch is valid until the next call to
 * {@link ShardLoader#next()}; copy what must live longer.
 */
public final class Batch {

    private final int width;
    private final FloatBuffer features;
    private final IntBuffer intLabels;
    private final LongBuffer longLabels;
    int rows;
    DataPosition positionAfter;
    long waitNanos;

    Batch(int capacity, int width, boolean longLabels) {
        this.width = width;
        this.features = direct((long) capacity * width * Float.BYTES).asFloatBuffer();
        this.intLabels =
                longLabels ? null : direct((long) capacity * Integer.BYTES).asIntBuffer();
        this.longLabels = longLabels ? direct((long) capacity * Long.BYTES).asLongBuffer() : null;
    }

    private static ByteBuffer direct(long bytes) {
        return ByteBuffer.allocateDirect(Math.toIntExact(bytes)).order(ByteOrder.nativeOrder());
    }

    /** The number of examples. */
    public int rows() {
        return rows;
    }

    /** The number of features of each example. */
    public int width() {
        return width;
    }

    /** {@code rows() * width()} floats, row after row (a view: position 0, limit at the end). */
    public FloatBuffer features() {
        return features.duplicate().position(0).limit(rows * width);
    }

    /** Whether the labels are int64 ({@link #longLabels()}) rather than int32 ({@link #intLabels()}). */
    public boolean hasLongLabels() {
        return longLabels != null;
    }

    /** The labels of an int32 label column. */
    public IntBuffer intLabels() {
        if (intLabels == null) {
            throw new IllegalStateException("the label column is int64: use longLabels()");
        }
        return intLabels.duplicate().position(0).limit(rows);
    }

    /** The labels of an int64 label column. */
    public LongBuffer longLabels() {
        if (longLabels == null) {
            throw new IllegalStateException("the label column is int32: use intLabels()");
        }
        return longLabels.duplicate().position(0).limit(rows);
    }

    /** The position once this batch is trained on: what a checkpoint written after its step records. */
    public DataPosition positionAfter() {
        return positionAfter;
    }

    /** How long the training thread waited for this batch, in nanoseconds. */
    public long waitNanos() {
        return waitNanos;
    }

    void put(int row, float[] source, int sourceRow, long label) {
        features.put(row * width, source, sourceRow * width, width);
        if (intLabels != null) {
            intLabels.put(row, (int) label);
        } else {
            longLabels.put(row, label);
        }
    }
}
