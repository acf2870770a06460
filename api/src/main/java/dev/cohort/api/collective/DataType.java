package dev.cohort.api.collective;

/** Element types the collectives move and reduce. */
public enum DataType {
    FLOAT32(4, true),
    FLOAT64(8, true),
    INT32(4, false),
    INT64(8, false);

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

    /** Lower-case name as used in messages and benchmark output, e.g. {@code float32}. */
    public String label() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
