package dev.cohort.api.collective;

/**
 * Element types the collectives move and reduce. The 16-bit floating-point types ({@link #FLOAT16},
 * IEEE binary16, and {@link #BFLOAT16}) are held as {@code short} bits (see {@link HalfFloats});
 * reductions compute in float32 and round the result to 16 bits.
 */
public enum DataType {
    FLOAT32(4, true),
    FLOAT64(8, true),
    INT32(4, false),
    INT64(8, false),
    FLOAT16(2, true),
    BFLOAT16(2, true);

    private final int byteSize;
    private final boolean floatingPoint;

    DataType(int byteSize, boolean floatingPoint) {
        this.byteSize = byteSize;
        this.floatingPoint = floatingPoint;
    }

    public int byteSize() {
        return byteSize;
    }

    public boolean isFloatingPoint() {
        return floatingPoint;
    }

    /** Whether elements are 16-bit floats ({@link #FLOAT16} or {@link #BFLOAT16}), held as {@code short} bits. */
    public boolean isHalfPrecision() {
        return this == FLOAT16 || this == BFLOAT16;
    }

    /** Lower-case name as used in messages and benchmark output, e.g. {@code float32}. */
    public String label() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
