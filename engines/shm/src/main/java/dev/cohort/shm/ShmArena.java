package dev.cohort.shm;

import dev.cohort.api.collective.BufferAllocator;
import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.shm.region.ShmAttachment;
import dev.cohort.shm.region.ShmLayout;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * This rank's arena in the shared mapping: buffers the group's allreduce reads and writes in
 * place, so nothing is copied in or out (see {@link ShmProcessGroup}). Every rank maps every
 * rank's arena; each allocates only from its own.
 *
 * <p>Allocation is first fit over a free list, in 4 KiB pages. The arena is a sparse part of the
 * file: tmpfs pages are claimed when a buffer is allocated, by writing zeros through the file's
 * channel, so a full {@code /dev/shm} makes {@link #allocate} return empty instead of killing
 * the process with SIGBUS at the first touch.
 *
 * <p>Lifetime: the arenas are mapped by an automatic arena, and every buffer handed out keeps
 * that mapping alive; it is unmapped once no buffer (and no group) references it. Native memory
 * wrapping a buffer (a tensor made with {@code from_blob}) does not count: whoever wraps it must
 * keep the buffer reachable as long as the tensor is used.
 */
final class ShmArena implements BufferAllocator {

    static final long PAGE = 4096;
    private static final int ZEROS = 1 << 20;

    private final ShmAttachment attachment;
    private final ShmLayout layout;
    private final long mine;
    private final long capacity;
    private final TreeMap<Long, Long> free = new TreeMap<>(); // offset -> bytes, within this rank's arena
    private final Map<Long, Long> used = new HashMap<>();
    private String lastFailure = "";
    private boolean closed;

    ShmArena(ShmAttachment attachment) {
        this.attachment = attachment;
        this.layout = attachment.layout();
        this.mine = areaOffset(attachment.rank());
        this.capacity = layout.arenaBytes();
        free.put(0L, capacity);
    }

    /** Where rank r's arena starts in {@link #memory()}. */
    long areaOffset(int r) {
        return r * layout.arenaStride();
    }

    /** Every rank's arena. */
    MemorySegment memory() {
        return layout.arenas();
    }

    /**
     * The offset of {@code buffer} in this rank's arena, or -1 when it lies elsewhere. Only address
     * arithmetic: cheap enough for every collective.
     */
    long offsetOf(MemorySegment buffer) {
        if (!buffer.isNative()) {
            return -1;
        }
        long at = buffer.address() - (layout.arenas().address() + mine);
        return at >= 0 && at + buffer.byteSize() <= capacity ? at : -1;
    }

    @Override
    public synchronized Optional<DenseBuffer> allocate(DataType type, int count) {
        if (closed) {
            throw new IllegalStateException("the shm arena's process group is closed");
        }
        if (count < 0) {
            throw new IllegalArgumentException("count must be >= 0, got " + count);
        }
        long bytes = Math.max(PAGE, ShmLayout.align((long) count * type.byteSize(), PAGE));
        Map.Entry<Long, Long> fit = free.entrySet().stream()
                .filter(e -> e.getValue() >= bytes)
                .findFirst()
                .orElse(null);
        if (fit == null) {
            lastFailure = "; a request for " + mib(bytes) + " found no room";
            return Optional.empty();
        }
        long at = fit.getKey();
        free.remove(at);
        if (fit.getValue() > bytes) {
            free.put(at + bytes, fit.getValue() - bytes);
        }
        try {
            claimZeroed(at, bytes);
        } catch (IOException e) {
            giveBack(at, bytes);
            lastFailure =
                    "; claiming " + mib(bytes) + " in " + attachment.path().getParent() + " failed: " + e.getMessage();
            return Optional.empty();
        }
        used.put(at, bytes);
        ByteBuffer memory = layout.arenas()
                .asSlice(mine + at, (long) count * type.byteSize())
                .asByteBuffer();
        return Optional.of(DenseBuffer.of(memory, type));
    }

    @Override
    public synchronized void release(DenseBuffer buffer) {
        long at = buffer.isDirect() ? offsetOf(MemorySegment.ofBuffer(buffer.view())) : -1;
        Long bytes = at < 0 ? null : used.remove(at);
        if (bytes == null) {
            throw new IllegalArgumentException(
                    buffer.describe() + " was not allocated from this shm arena (or was released)");
        }
        giveBack(at, bytes);
    }

    @Override
    public synchronized String describe() {
        long freeBytes = free.values().stream().mapToLong(Long::longValue).sum();
        String tmpfs;
        try {
            tmpfs = mib(Files.getFileStore(attachment.path().getParent()).getUsableSpace()) + " free in "
                    + attachment.path().getParent();
        } catch (IOException e) {
            tmpfs = attachment.path().getParent() + " unreadable";
        }
        return "the shm arena of rank " + attachment.rank() + " (" + mib(capacity) + ", --shm-arena-mib; "
                + mib(freeBytes) + " unallocated; " + tmpfs + lastFailure + ")";
    }

    synchronized void close() {
        closed = true;
    }

    /** Writes zeros over {@code [at, at + bytes)} of this rank's arena through the file, claiming its pages. */
    private void claimZeroed(long at, long bytes) throws IOException {
        ByteBuffer zeros = ByteBuffer.allocateDirect((int) Math.min(bytes, ZEROS));
        long file = layout.arenasOffset() + mine + at;
        for (long done = 0; done < bytes; ) {
            zeros.clear().limit((int) Math.min(zeros.capacity(), bytes - done));
            done += attachment.channel().write(zeros, file + done);
        }
    }

    private void giveBack(long at, long bytes) {
        long start = at;
        long length = bytes;
        Map.Entry<Long, Long> before = free.floorEntry(at);
        if (before != null && before.getKey() + before.getValue() == at) {
            start = before.getKey();
            length += before.getValue();
            free.remove(before.getKey());
        }
        Long after = free.get(at + bytes);
        if (after != null) {
            free.remove(at + bytes);
            length += after;
        }
        free.put(start, length);
    }

    private static String mib(long bytes) {
        return bytes >= 10L << 20 || bytes % (1 << 20) == 0
                ? (bytes >> 20) + " MiB"
                : String.format(java.util.Locale.ROOT, "%.1f MiB", bytes / 1048576.0);
    }
}
