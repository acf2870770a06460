package dev.cohort.api.collective;

import java.util.Optional;

/**
 * Memory that a process group moves without copying it: an engine that offers one (see
 * {@link ProcessGroup#allocator()}) reads and writes such buffers in place, where it would
 * otherwise copy a caller's buffer into its own memory and the result back. The shm engine hands
 * out buffers inside its shared mapping.
 *
 * <p>Every rank should allocate the buffers of one collective alike: an engine may refuse a
 * collective whose buffer comes from the allocator on some ranks only.
 */
public interface BufferAllocator {

    /**
     * A zeroed direct buffer of {@code count} elements of {@code type}, or empty when the
     * allocator has no room left (the caller then uses ordinary memory). The memory stays valid
     * while the buffer is reachable, even after the group closes.
     */
    Optional<DenseBuffer> allocate(DataType type, int count);

    /** Gives back a buffer {@link #allocate} returned; the caller must not use it afterwards. */
    void release(DenseBuffer buffer);

    /** What memory this is and how to get more, for messages. */
    String describe();
}
