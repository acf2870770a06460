package dev.cohort.hier;

import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.DenseBuffer;
import java.nio.ByteBuffer;

/**
 * Direct memory for one intermediate result, reused from call to call and grown as needed: a
 * fresh direct buffer per call costs a zeroing pass, and Java may stall allocating direct memory
 * until a garbage collection frees the last ones.
 */
final class Scratch {

    private ByteBuffer memory = ByteBuffer.allocateDirect(0);

    /** {@code count} elements of {@code type}; valid until the next {@code take}. */
    DenseBuffer take(DataType type, int count) {
        long bytes = (long) count * type.byteSize();
        if (bytes > memory.capacity()) {
            memory = ByteBuffer.allocateDirect(Math.toIntExact(bytes));
        }
        return DenseBuffer.of(memory.duplicate().clear().limit((int) bytes), type);
    }
}
