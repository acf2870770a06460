package dev.cohort.api.collective;

import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.nio.ShortBuffer;
import java.util.Objects;
import java.util.Optional;

/**
 * A view of dense memory the caller owns: a range of a heap array or of an NIO buffer (heap or
 * direct, so native tensor memory can be wrapped without a copy). Collectives read and write
 * through the view; they never keep it after the operation completes.
 *
 * <p>The view covers {@code count()} elements starting at element 0 of {@link #view()}. Direct
 * buffers must be in native byte order, because engines hand their address to native code.
 * A buffer must not be touched by the caller while an operation on it is pending.
 */
public final class DenseBuffer {

    private final DataType type;
    private final Buffer view;
    /** The bytes {@link #view} was made from (native order, the same elements), or null. */
    private final ByteBuffer bytes;

    private DenseBuffer(DataType type, Buffer view) {
        this(type, view, null);
    }

    private DenseBuffer(DataType type, Buffer view, ByteBuffer bytes) {
        this.type = type;
        this.view = view;
        this.bytes = bytes;
    }

    public static DenseBuffer of(float[] array) {
        return of(array, 0, Objects.requireNonNull(array, "array").length);
    }

    public static DenseBuffer of(float[] array, int offset, int count) {
        checkRange(Objects.requireNonNull(array, "array").length, offset, count);
        return new DenseBuffer(
                DataType.FLOAT32, FloatBuffer.wrap(array, offset, count).slice());
    }

    public static DenseBuffer of(double[] array) {
        return of(array, 0, Objects.requireNonNull(array, "array").length);
    }

    public static DenseBuffer of(double[] array, int offset, int count) {
        checkRange(Objects.requireNonNull(array, "array").length, offset, count);
        return new DenseBuffer(
                DataType.FLOAT64, DoubleBuffer.wrap(array, offset, count).slice());
    }

    public static DenseBuffer of(int[] array) {
        return of(array, 0, Objects.requireNonNull(array, "array").length);
    }

    public static DenseBuffer of(int[] array, int offset, int count) {
        checkRange(Objects.requireNonNull(array, "array").length, offset, count);
        return new DenseBuffer(
                DataType.INT32, IntBuffer.wrap(array, offset, count).slice());
    }

    public static DenseBuffer of(long[] array) {
        return of(array, 0, Objects.requireNonNull(array, "array").length);
    }

    public static DenseBuffer of(long[] array, int offset, int count) {
        checkRange(Objects.requireNonNull(array, "array").length, offset, count);
        return new DenseBuffer(
                DataType.INT64, LongBuffer.wrap(array, offset, count).slice());
    }

    /**
     * A 16-bit floating-point buffer ({@link DataType#FLOAT16} or {@link DataType#BFLOAT16}) over
     * {@code array}, whose elements are the values' bits (see {@link HalfFloats}).
     */
    public static DenseBuffer of(short[] array, DataType type) {
        return of(ShortBuffer.wrap(Objects.requireNonNull(array, "array")), type);
    }

    /** Wraps the 16-bit floating-point elements (as bits) between the buffer's position and limit. */
    public static DenseBuffer of(ShortBuffer buffer, DataType type) {
        if (!Objects.requireNonNull(type, "type").isHalfPrecision()) {
            throw new IllegalArgumentException(
                    "a short buffer holds float16 or bfloat16 elements, not " + type.label());
        }
        return new DenseBuffer(type, checkOrder(buffer.slice(), buffer.order()));
    }

    /** Wraps the elements between the buffer's position and limit. */
    public static DenseBuffer of(FloatBuffer buffer) {
        return new DenseBuffer(DataType.FLOAT32, checkOrder(buffer.slice(), buffer.order()));
    }

    /** Wraps the elements between the buffer's position and limit. */
    public static DenseBuffer of(DoubleBuffer buffer) {
        return new DenseBuffer(DataType.FLOAT64, checkOrder(buffer.slice(), buffer.order()));
    }

    /** Wraps the elements between the buffer's position and limit. */
    public static DenseBuffer of(IntBuffer buffer) {
        return new DenseBuffer(DataType.INT32, checkOrder(buffer.slice(), buffer.order()));
    }

    /** Wraps the elements between the buffer's position and limit. */
    public static DenseBuffer of(LongBuffer buffer) {
        return new DenseBuffer(DataType.INT64, checkOrder(buffer.slice(), buffer.order()));
    }

    /**
     * Wraps raw bytes (for example native tensor memory) as elements of {@code type}: the bytes
     * between position and limit, whose length must be a multiple of the element size.
     */
    public static DenseBuffer of(ByteBuffer bytes, DataType type) {
        Objects.requireNonNull(bytes, "bytes");
        Objects.requireNonNull(type, "type");
        if (bytes.remaining() % type.byteSize() != 0) {
            throw new IllegalArgumentException("a " + type.label() + " buffer needs a multiple of " + type.byteSize()
                    + " bytes, got " + bytes.remaining());
        }
        ByteBuffer b = bytes.slice().order(ByteOrder.nativeOrder());
        Buffer typed = switch (type) {
            case FLOAT32 -> b.asFloatBuffer();
            case FLOAT64 -> b.asDoubleBuffer();
            case INT32 -> b.asIntBuffer();
            case INT64 -> b.asLongBuffer();
            case FLOAT16, BFLOAT16 -> b.asShortBuffer();
        };
        return new DenseBuffer(type, typed, b);
    }

    /** A new zeroed heap buffer. */
    public static DenseBuffer allocate(DataType type, int count) {
        if (count < 0) {
            throw new IllegalArgumentException("count must be >= 0, got " + count);
        }
        return switch (type) {
            case FLOAT32 -> of(new float[count]);
            case FLOAT64 -> of(new double[count]);
            case INT32 -> of(new int[count]);
            case INT64 -> of(new long[count]);
            case FLOAT16, BFLOAT16 -> of(new short[count], type);
        };
    }

    /** A new zeroed direct buffer in native byte order. */
    public static DenseBuffer allocateDirect(DataType type, int count) {
        if (count < 0) {
            throw new IllegalArgumentException("count must be >= 0, got " + count);
        }
        return of(ByteBuffer.allocateDirect(Math.multiplyExact(count, type.byteSize())), type);
    }

    public DataType dataType() {
        return type;
    }

    public int count() {
        return view.limit();
    }

    public long byteSize() {
        return (long) count() * type.byteSize();
    }

    public boolean isReadOnly() {
        return view.isReadOnly();
    }

    public boolean isDirect() {
        return view.isDirect();
    }

    /**
     * A fresh view of the elements (position 0, limit {@code count()}), sharing the memory: a
     * {@link FloatBuffer}, {@link DoubleBuffer}, {@link IntBuffer}, {@link LongBuffer} or (for
     * the 16-bit floating-point types, as bits) {@link ShortBuffer} according to {@link #dataType()}.
     */
    public Buffer view() {
        return view.duplicate();
    }

    /** The elements {@code [offset, offset + count)} as a buffer sharing this one's memory. */
    public DenseBuffer slice(int offset, int count) {
        checkRange(count(), offset, count);
        Buffer v = view.duplicate();
        v.position(offset).limit(offset + count);
        ByteBuffer b = null;
        if (bytes != null) {
            int e = type.byteSize();
            b = bytes.duplicate()
                    .limit((offset + count) * e)
                    .position(offset * e)
                    .slice()
                    .order(ByteOrder.nativeOrder());
        }
        return new DenseBuffer(type, v.slice(), b);
    }

    /**
     * The elements' bytes (native order, position 0, sharing the memory) where this buffer was
     * made from bytes ({@link #of(ByteBuffer, DataType)}, {@link #allocateDirect}, and their
     * slices); empty for arrays and typed NIO buffers, whose bytes Java does not expose. Engines
     * that move bytes (sockets, shared memory) use it to send from and receive into the
     * caller's memory without a copy.
     */
    public Optional<ByteBuffer> bytes() {
        return bytes == null ? Optional.empty() : Optional.of(bytes.duplicate().order(ByteOrder.nativeOrder()));
    }

    /** A heap copy of these elements (never read-only). */
    public DenseBuffer copy() {
        DenseBuffer copy = allocate(type, count());
        copy.copyFrom(this);
        return copy;
    }

    /** A copy of these elements in the same kind of memory: direct stays direct, heap stays heap. */
    public DenseBuffer copyLike() {
        DenseBuffer copy = isDirect() ? allocateDirect(type, count()) : allocate(type, count());
        copy.copyFrom(this);
        return copy;
    }

    /** Copies all of {@code source} (same type and count) into this buffer. */
    public void copyFrom(DenseBuffer source) {
        if (source.type != type || source.count() != count()) {
            throw new IllegalArgumentException("cannot copy " + source.describe() + " into " + describe());
        }
        Buffer dst = view.duplicate();
        Buffer src = source.view.duplicate();
        switch (type) {
            case FLOAT32 -> ((FloatBuffer) dst).put((FloatBuffer) src);
            case FLOAT64 -> ((DoubleBuffer) dst).put((DoubleBuffer) src);
            case INT32 -> ((IntBuffer) dst).put((IntBuffer) src);
            case INT64 -> ((LongBuffer) dst).put((LongBuffer) src);
            case FLOAT16, BFLOAT16 -> ((ShortBuffer) dst).put((ShortBuffer) src);
        }
    }

    /** Element {@code i} widened to double (exact but for int64 beyond 2^53). */
    public double getDouble(int i) {
        return switch (type) {
            case FLOAT32 -> ((FloatBuffer) view).get(i);
            case FLOAT64 -> ((DoubleBuffer) view).get(i);
            case INT32 -> ((IntBuffer) view).get(i);
            case INT64 -> ((LongBuffer) view).get(i);
            case FLOAT16, BFLOAT16 -> HalfFloats.toFloat(type, ((ShortBuffer) view).get(i));
        };
    }

    /** Element {@code i} of an integer buffer as long; for floating-point types, truncated. */
    public long getLong(int i) {
        return switch (type) {
            case FLOAT32 -> (long) ((FloatBuffer) view).get(i);
            case FLOAT64 -> (long) ((DoubleBuffer) view).get(i);
            case INT32 -> ((IntBuffer) view).get(i);
            case INT64 -> ((LongBuffer) view).get(i);
            case FLOAT16, BFLOAT16 -> (long) HalfFloats.toFloat(type, ((ShortBuffer) view).get(i));
        };
    }

    /** Sets element {@code i}, narrowing {@code value} to the element type (16-bit floats through float32). */
    public void setDouble(int i, double value) {
        switch (type) {
            case FLOAT32 -> ((FloatBuffer) view).put(i, (float) value);
            case FLOAT64 -> ((DoubleBuffer) view).put(i, value);
            case INT32 -> ((IntBuffer) view).put(i, (int) value);
            case INT64 -> ((LongBuffer) view).put(i, (long) value);
            case FLOAT16, BFLOAT16 -> ((ShortBuffer) view).put(i, HalfFloats.fromFloat(type, (float) value));
        }
    }

    /** Sets element {@code i} of an integer buffer exactly (narrowing to int32 where needed). */
    public void setLong(int i, long value) {
        switch (type) {
            case FLOAT32 -> ((FloatBuffer) view).put(i, value);
            case FLOAT64 -> ((DoubleBuffer) view).put(i, value);
            case INT32 -> ((IntBuffer) view).put(i, (int) value);
            case INT64 -> ((LongBuffer) view).put(i, value);
            case FLOAT16, BFLOAT16 -> ((ShortBuffer) view).put(i, HalfFloats.fromFloat(type, (float) value));
        }
    }

    /** For messages: e.g. {@code float32[1024] (direct)}. */
    public String describe() {
        return type.label() + "[" + count() + "]" + (isDirect() ? " (direct)" : "")
                + (isReadOnly() ? " (read-only)" : "");
    }

    @Override
    public String toString() {
        return "DenseBuffer " + describe();
    }

    private static <B extends Buffer> B checkOrder(B buffer, ByteOrder order) {
        if (buffer.isDirect() && order != ByteOrder.nativeOrder()) {
            throw new IllegalArgumentException("a direct buffer must be in native byte order ("
                    + ByteOrder.nativeOrder() + "), this one is " + order
                    + "; create it with ByteBuffer.allocateDirect(n).order(ByteOrder.nativeOrder())");
        }
        return buffer;
    }

    private static void checkRange(int length, int offset, int count) {
        if (offset < 0 || count < 0 || offset > length - count) {
            throw new IndexOutOfBoundsException(
                    "range [" + offset + ", " + offset + "+" + count + ") does not fit in " + length + " elements");
        }
    }
}
