package dev.cohort.shm.region;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * Where everything lies in one group's shared mapping of a {@code /dev/shm} file: a flyweight
 * over the mapping, made once per group for its shape (ranks, segment and arena bytes) and
 * {@link #wrap wrapped} over the memory by {@link ShmAttachment}. It only computes offsets and
 * reads or writes words; how the mapping is made and joined is {@link ShmAttachment}'s.
 *
 * <p>Layout (byte offsets; {@code n} ranks, {@code S} segment bytes, {@code A} arena bytes):
 * <pre>
 *   [0, 4096)            header: magic, version, world size, segment bytes, total bytes,
 *                        creator pid, attach count, arena bytes
 *   CONTROL + 128 r      rank r's line: barrier counter, operation tags (by sequence parity);
 *                        64 bytes further, how many peers sleep waiting for its counter
 *   INFO + 64 r          rank r's pid and abort flag (read only on the slow path), where the
 *                        buffer of its in-place allreduce lies in its arena (by sequence parity)
 *   DATA + r * STRIDE    rank r's slot: two pipeline stages of S bytes each
 *   ARENAS + r * (A + 4 KiB)  rank r's arena (see {@code ShmArena}); absent when A is 0
 * </pre>
 * Each rank's counter has its own 128-byte line, so a rank's release-store invalidates no line
 * another rank writes. Nothing but the tag and the counter is written to that line per operation:
 * the peers spin on it, and each store to it while they do costs a cache-line round trip (a
 * stall report tells who started an operation from the tags, not from a counter of its own).
 * Slots are {@code 2S + 4 KiB} apart, arenas {@code A + 4 KiB}: power-of-two distances between
 * buffers read together alias in the caches (the prototype measured 20x at 2^28 bytes).
 *
 * <p>The arenas are a second mapping of the same file (see {@link ShmAttachment}); {@link #arenas()}
 * starts at {@link #arenasOffset()} of the file.
 */
public final class ShmLayout {

    static final long MAGIC = 0x434F484F52545348L; // "COHORTSH"
    static final long VERSION = 3;

    static final long H_MAGIC = 0;
    static final long H_VERSION = 8;
    static final long H_WORLD = 16;
    static final long H_SEGMENT = 24;
    static final long H_TOTAL = 32;
    static final long H_CREATOR = 40;
    static final long H_ATTACHED = 48;
    static final long H_ARENA = 56;
    static final long HEADER_BYTES = 4096;
    private static final long CONTROL = HEADER_BYTES;
    private static final long CONTROL_STRIDE = 128;
    private static final long TAG = 8;
    private static final long SLEEPERS = 64;
    /** Where a counter's low 32 bits lie within it. */
    private static final long LOW_WORD = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN ? 0 : 4;

    private static final long INFO_STRIDE = 64;
    private static final long ABORT = 8;
    private static final long BUFFER_AT = 16;

    /** Plain, acquire and release access to the mapping's 64-bit words. */
    public static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    private final int size;
    private final long segmentBytes;
    private final long arenaBytes;
    private final long info;
    private final long data;
    private final long slotStride;
    private final long arenaStride;
    private final long arenasOffset;
    private MemorySegment memory;
    private MemorySegment arenas;

    /** The layout of a group of {@code size} ranks; {@link #wrap} it before reading or writing. */
    public ShmLayout(int size, long segmentBytes, long arenaBytes) {
        this.size = size;
        this.segmentBytes = segmentBytes;
        this.arenaBytes = arenaBytes;
        this.info = align(CONTROL + size * CONTROL_STRIDE, 4096);
        this.data = align(info + size * INFO_STRIDE, 4096);
        this.slotStride = 2 * segmentBytes + 4096;
        this.arenaStride = arenaBytes == 0 ? 0 : arenaBytes + 4096;
        this.arenasOffset = align(data + size * slotStride, 4096);
    }

    /** Points this layout at a mapping of the file up to {@link #arenasOffset()} and one of the arenas (null without). */
    ShmLayout wrap(MemorySegment memory, MemorySegment arenas) {
        this.memory = memory;
        this.arenas = arenas;
        return this;
    }

    public static long align(long x, long a) {
        return (x + a - 1) & -a;
    }

    /** The header, control lines and slots. */
    public MemorySegment memory() {
        return memory;
    }

    /** All ranks' arenas (null when {@link #arenaBytes()} is 0). */
    public MemorySegment arenas() {
        return arenas;
    }

    public int size() {
        return size;
    }

    public long segmentBytes() {
        return segmentBytes;
    }

    public long arenaBytes() {
        return arenaBytes;
    }

    /** The distance between two ranks' arenas. */
    public long arenaStride() {
        return arenaStride;
    }

    /** Where the arenas start in the file. */
    public long arenasOffset() {
        return arenasOffset;
    }

    /** The file's size. */
    public long totalBytes() {
        return arenasOffset + size * arenaStride;
    }

    /** The offset of stage {@code stage} (0 or 1) of rank {@code r}'s slot. */
    public long slot(int r, int stage) {
        return data + r * slotStride + stage * segmentBytes;
    }

    public long counterOffset(int r) {
        return CONTROL + r * CONTROL_STRIDE;
    }

    /** The counter's low 32 bits, the word a futex sleeps on. */
    public long counterWordOffset(int r) {
        return counterOffset(r) + LOW_WORD;
    }

    /**
     * How many peers sleep in the kernel waiting for rank r's counter: r wakes them after storing
     * it. On the second 64 bytes of r's line, so that the sleepers' updates do not disturb those
     * that spin on the counter.
     */
    public long sleepersOffset(int r) {
        return CONTROL + r * CONTROL_STRIDE + SLEEPERS;
    }

    public long tagOffset(int r, long sequence) {
        return CONTROL + r * CONTROL_STRIDE + TAG + 8 * (sequence & 1);
    }

    /** Where rank r publishes the offset of its in-place allreduce buffer in its arena. */
    public long bufferAtOffset(int r, long sequence) {
        return info + r * INFO_STRIDE + BUFFER_AT + 8 * (sequence & 1);
    }

    long pidOffset(int r) {
        return info + r * INFO_STRIDE;
    }

    public long pid(int r) {
        return (long) LONG.getAcquire(memory, pidOffset(r));
    }

    public long abortFlag(int r) {
        return (long) LONG.getAcquire(memory, info + r * INFO_STRIDE + ABORT);
    }

    /** Tells the peers rank {@code r} gave up on the group, so they fail at once instead of at their timeout. */
    void abort(int r) {
        LONG.setRelease(memory, info + r * INFO_STRIDE + ABORT, 1L);
    }
}
