package dev.cohort.shm;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * One group's shared mapping of a {@code /dev/shm} file, and how the ranks of the host attach to
 * it.
 *
 * <p>Layout (byte offsets; {@code n} ranks, {@code S} segment bytes, {@code A} arena bytes):
 * <pre>
 *   [0, 4096)            header: magic, version, world size, segment bytes, total bytes,
 *                        creator pid, attach count, arena bytes
 *   CONTROL + 128 r      rank r's line: barrier counter, operation tags (by sequence parity)
 *   INFO + 64 r          rank r's pid and abort flag (read only on the slow path), where the
 *                        buffer of its in-place allreduce lies in its arena (by sequence parity)
 *   DATA + r * STRIDE    rank r's slot: two pipeline stages of S bytes each
 *   ARENAS + r * (A + 4 KiB)  rank r's arena (see {@link ShmArena}); absent when A is 0
 * </pre>
 * Each rank's counter has its own 128-byte line, so a rank's release-store invalidates no line
 * another rank writes. Nothing but the tag and the counter is written to that line per operation:
 * the peers spin on it, and each store to it while they do costs a cache-line round trip (a
 * stall report tells who started an operation from the tags, not from a counter of its own). Slots are {@code 2S + 4 KiB} apart, arenas {@code A + 4 KiB}: power-of-two
 * distances between buffers read together alias in the caches (the prototype measured 20x at
 * 2^28 bytes).
 *
 * <p>The file has two mappings: the header, control lines and slots with an arena that
 * {@link #close()} unmaps, and the arenas with an automatic one, unmapped only once no buffer
 * handed out from them is reachable (native tensors may wrap them; see {@link ShmArena}). The
 * file's channel stays open while the group lives: the arena claims tmpfs pages by writing
 * through it, where a full {@code /dev/shm} is an {@link IOException}, not a SIGBUS.
 *
 * <p>Attach: local rank 0 creates the file with {@code O_EXCL} and mode 0600 (an existing file
 * whose creator is dead is stale and replaced; one whose creator lives belongs to another job and
 * is an error), sizes it, writes the header and publishes the magic last. The others wait for the
 * file and the magic, and check that world size and segment size match. Every rank claims its
 * pid slot (a taken slot means two jobs collided) and counts itself in; the last one to arrive
 * unlinks the file, so from then on nothing is left behind even if every rank is killed.
 */
final class ShmRegion implements AutoCloseable {

    static final long MAGIC = 0x434F484F52545348L;   // "COHORTSH"
    static final long VERSION = 2;

    private static final long H_MAGIC = 0;
    private static final long H_VERSION = 8;
    private static final long H_WORLD = 16;
    private static final long H_SEGMENT = 24;
    private static final long H_TOTAL = 32;
    private static final long H_CREATOR = 40;
    private static final long H_ATTACHED = 48;
    private static final long H_ARENA = 56;
    static final long HEADER_BYTES = 4096;
    static final long CONTROL = HEADER_BYTES;
    static final long CONTROL_STRIDE = 128;
    static final long TAG = 8;
    static final long INFO_STRIDE = 64;
    static final long ABORT = 8;
    static final long BUFFER_AT = 16;

    static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    final MemorySegment memory;
    final Path path;
    final int rank;
    final int size;
    final long segmentBytes;
    final long info;
    final long data;
    final long slotStride;
    final long arenaBytes;
    final long arenaStride;
    /** All ranks' arenas (null when {@code arenaBytes} is 0), mapped by an automatic arena. */
    final MemorySegment arenas;
    final FileChannel channel;
    private final Arena arena;
    private final Object fileKey;

    private ShmRegion(Arena arena, MemorySegment memory, FileChannel channel, Path path, Object fileKey, int rank,
                      int size, long segmentBytes, long arenaBytes) throws IOException {
        this.arena = arena;
        this.memory = memory;
        this.channel = channel;
        this.path = path;
        this.fileKey = fileKey;
        this.rank = rank;
        this.size = size;
        this.segmentBytes = segmentBytes;
        this.info = infoOffset(size);
        this.data = dataOffset(size);
        this.slotStride = 2 * segmentBytes + 4096;
        this.arenaBytes = arenaBytes;
        this.arenaStride = arenaStride(arenaBytes);
        this.arenas = arenaBytes == 0 ? null : channel.map(FileChannel.MapMode.READ_WRITE,
                arenasOffset(size, segmentBytes), size * arenaStride, Arena.ofAuto());
    }

    static long infoOffset(int size) {
        return align(CONTROL + size * CONTROL_STRIDE, 4096);
    }

    static long dataOffset(int size) {
        return align(infoOffset(size) + size * INFO_STRIDE, 4096);
    }

    /** Where the arenas start in the file. */
    static long arenasOffset(int size, long segmentBytes) {
        return align(dataOffset(size) + size * (2 * segmentBytes + 4096), 4096);
    }

    static long arenaStride(long arenaBytes) {
        return arenaBytes == 0 ? 0 : arenaBytes + 4096;
    }

    static long totalBytes(int size, long segmentBytes, long arenaBytes) {
        return arenasOffset(size, segmentBytes) + size * arenaStride(arenaBytes);
    }

    static long align(long x, long a) {
        return (x + a - 1) & -a;
    }

    /** The offset of stage {@code stage} (0 or 1) of rank {@code r}'s slot. */
    long slot(int r, int stage) {
        return data + r * slotStride + stage * segmentBytes;
    }

    long counterOffset(int r) {
        return CONTROL + r * CONTROL_STRIDE;
    }

    long tagOffset(int r, long sequence) {
        return CONTROL + r * CONTROL_STRIDE + TAG + 8 * (sequence & 1);
    }

    /** Where rank r publishes the offset of its in-place allreduce buffer in its arena. */
    long bufferAtOffset(int r, long sequence) {
        return info + r * INFO_STRIDE + BUFFER_AT + 8 * (sequence & 1);
    }

    long pid(int r) {
        return (long) LONG.getAcquire(memory, info + r * INFO_STRIDE);
    }

    long abortFlag(int r) {
        return (long) LONG.getAcquire(memory, info + r * INFO_STRIDE + ABORT);
    }

    /** Tells the peers this rank gave up on the group, so they fail at once instead of at their timeout. */
    void abort() {
        try {
            LONG.setRelease(memory, info + rank * INFO_STRIDE + ABORT, 1L);
        } catch (IllegalStateException closed) {
            // already unmapped
        }
    }

    /**
     * Creates (local rank 0) or opens the mapping at {@code path} and attaches this rank, waiting
     * at most {@code timeout} for the file and for every rank to attach.
     */
    static ShmRegion attach(Path path, int rank, int size, long segmentBytes, long arenaBytes, Duration timeout,
                            String who) {
        long deadline = System.nanoTime() + timeout.toNanos();
        long total = totalBytes(size, segmentBytes, arenaBytes);
        ShmRegion region = rank == 0 ? create(path, size, segmentBytes, arenaBytes, total, deadline, who)
                : open(path, rank, size, segmentBytes, arenaBytes, total, deadline, who);
        try {
            region.join(deadline, timeout, who);
            return region;
        } catch (RuntimeException e) {
            region.deleteIfOurs();
            region.close();
            throw e;
        }
    }

    private static ShmRegion create(Path path, int size, long segmentBytes, long arenaBytes, long total, long deadline,
                                    String who) {
        long self = ProcessHandle.current().pid();
        for (int attempt = 0; ; attempt++) {
            try {
                Files.createFile(path, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
                break;
            } catch (FileAlreadyExistsException e) {
                Optional<Long> creator = creatorOf(path);
                if (creator.isPresent() && creator.get() != self && alive(creator.get())) {
                    throw new ShmConnectException(who + ": " + path + " belongs to a running job (pid " + creator.get()
                            + "); two jobs on one host need different COHORT_RUN_ID or MASTER_PORT values");
                }
                if (creator.isEmpty() && attempt < 50 && System.nanoTime() < deadline) {
                    sleep(20);   // perhaps another creator is still writing its header
                    continue;
                }
                deleteQuietly(path);   // stale: its creator died before every rank attached
            } catch (IOException e) {
                throw new ShmConnectException(who + ": cannot create " + path + ": " + e, e);
            }
        }
        Arena arena = Arena.ofShared();
        FileChannel ch = null;
        try {
            ch = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE);
            Object key = Files.readAttributes(path, BasicFileAttributes.class).fileKey();
            // Maps (and so extends the file, sparsely) up to the arenas; the arenas' own mapping extends it to total.
            MemorySegment m = ch.map(FileChannel.MapMode.READ_WRITE, 0, arenasOffset(size, segmentBytes), arena);
            ShmRegion region = new ShmRegion(arena, m, ch, path, key, 0, size, segmentBytes, arenaBytes);
            m.set(ValueLayout.JAVA_LONG, H_VERSION, VERSION);
            m.set(ValueLayout.JAVA_LONG, H_WORLD, size);
            m.set(ValueLayout.JAVA_LONG, H_SEGMENT, segmentBytes);
            m.set(ValueLayout.JAVA_LONG, H_TOTAL, total);
            m.set(ValueLayout.JAVA_LONG, H_CREATOR, self);
            m.set(ValueLayout.JAVA_LONG, H_ARENA, arenaBytes);
            LONG.setRelease(m, H_MAGIC, MAGIC);
            return region;
        } catch (IOException | RuntimeException e) {
            arena.close();
            closeQuietly(ch);
            deleteQuietly(path);
            throw new ShmConnectException(who + ": cannot map " + path + " (" + total + " bytes): " + e, e);
        }
    }

    private static ShmRegion open(Path path, int rank, int size, long segmentBytes, long arenaBytes, long total,
                                  long deadline, String who) {
        String lastState = "the file does not exist";
        while (true) {
            if (System.nanoTime() - deadline > 0) {
                throw new ShmConnectException(who + ": local rank 0 did not create " + path + " in time (" + lastState
                        + "); is local rank 0 running with the same COHORT_RUN_ID, COHORT_RESTART_COUNT and MASTER_PORT?");
            }
            FileChannel ch = null;
            Arena arena = null;
            try {
                ch = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE);
                Object key = Files.readAttributes(path, BasicFileAttributes.class).fileKey();
                if (ch.size() < HEADER_BYTES) {
                    lastState = "it has " + ch.size() + " bytes";
                } else {
                    String mismatch;
                    try (Arena header = Arena.ofConfined()) {
                        MemorySegment h = ch.map(FileChannel.MapMode.READ_ONLY, 0, HEADER_BYTES, header);
                        mismatch = (long) LONG.getAcquire(h, H_MAGIC) != MAGIC ? ""
                                : mismatch(h, size, segmentBytes, arenaBytes, total);
                    }
                    if (mismatch == null && ch.size() >= total) {
                        arena = Arena.ofShared();
                        MemorySegment m = ch.map(FileChannel.MapMode.READ_WRITE, 0, arenasOffset(size, segmentBytes), arena);
                        ShmRegion region = new ShmRegion(arena, m, ch, path, key, rank, size, segmentBytes, arenaBytes);
                        ch = null;      // the region owns them now
                        arena = null;
                        return region;
                    }
                    if (mismatch != null && !mismatch.isEmpty()) {
                        throw new ShmConnectException(who + ": " + path + " was created for another group: " + mismatch);
                    }
                    lastState = "its header is not written yet";
                }
            } catch (NoSuchFileException e) {
                lastState = "the file does not exist";
            } catch (IOException e) {
                throw new ShmConnectException(who + ": cannot open " + path + ": " + e, e);
            } finally {
                if (arena != null) {
                    arena.close();
                }
                closeQuietly(ch);
            }
            sleep(5);
        }
    }

    private static String mismatch(MemorySegment m, int size, long segmentBytes, long arenaBytes, long total) {
        long version = m.get(ValueLayout.JAVA_LONG, H_VERSION);
        long world = m.get(ValueLayout.JAVA_LONG, H_WORLD);
        long segment = m.get(ValueLayout.JAVA_LONG, H_SEGMENT);
        long bytes = m.get(ValueLayout.JAVA_LONG, H_TOTAL);
        long arena = m.get(ValueLayout.JAVA_LONG, H_ARENA);
        if (version != VERSION) {
            return "layout version " + version + ", this rank speaks " + VERSION;
        }
        if (world != size) {
            return "world size " + world + ", this rank has WORLD_SIZE=" + size;
        }
        if (segment != segmentBytes) {
            return "segment of " + segment + " bytes, this rank uses " + segmentBytes + " (--shm-segment-kib must agree)";
        }
        if (arena != arenaBytes || bytes != total) {
            return "arena of " + arena + " bytes per rank, this rank uses " + arenaBytes + " (--shm-arena-mib must agree)";
        }
        return null;
    }

    /** Claims this rank's pid slot, counts itself in (the last one unlinks the file), waits for all. */
    private void join(long deadline, Duration timeout, String who) {
        long self = ProcessHandle.current().pid();
        long pidAt = info + rank * INFO_STRIDE;
        long previous = (long) LONG.compareAndExchange(memory, pidAt, 0L, self);
        if (previous != 0 && previous != self) {
            throw new ShmConnectException(who + ": rank " + rank + "'s slot in " + path + " is taken by pid " + previous
                    + "; two jobs on one host need different COHORT_RUN_ID or MASTER_PORT values");
        }
        long attached = (long) LONG.getAndAdd(memory, H_ATTACHED, 1L) + 1;
        if (attached == size) {
            deleteIfOurs();
        }
        for (int r = 0; r < size; r++) {
            while (pid(r) == 0) {
                if (System.nanoTime() - deadline > 0) {
                    throw new ShmConnectException(who + ": rank " + r + " did not attach to " + path + " within "
                            + timeout + " (is it started, on this host, with the same COHORT_RUN_ID, and does it run "
                            + "the same backend? `auto` picks shm only on JDK 22 or newer)");
                }
                long creator = memory.get(ValueLayout.JAVA_LONG, H_CREATOR);
                if (!alive(creator)) {
                    throw new ShmConnectException(who + ": local rank 0 (pid " + creator + ") died while the ranks attached");
                }
                sleep(1);
            }
        }
    }

    /** Unlinks the file if the name still refers to the file this rank mapped. */
    void deleteIfOurs() {
        try {
            Object key = Files.readAttributes(path, BasicFileAttributes.class).fileKey();
            if (Objects.equals(key, fileKey)) {
                Files.deleteIfExists(path);
            }
        } catch (IOException e) {
            // gone already, or never ours
        }
    }

    private static Optional<Long> creatorOf(Path path) {
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
            if (ch.size() < HEADER_BYTES) {
                return Optional.empty();
            }
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment m = ch.map(FileChannel.MapMode.READ_ONLY, 0, HEADER_BYTES, arena);
                if ((long) LONG.getAcquire(m, H_MAGIC) != MAGIC) {
                    return Optional.empty();
                }
                return Optional.of(m.get(ValueLayout.JAVA_LONG, H_CREATOR));
            }
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    static boolean alive(long pid) {
        return ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
    }

    private static void closeQuietly(FileChannel ch) {
        if (ch != null) {
            try {
                ch.close();
            } catch (IOException e) {
                // nothing was written through it that matters
            }
        }
    }

    private static void deleteQuietly(Path path) {
        try {
            Files.deleteIfExists(path);
        } catch (IOException e) {
            // the create that follows reports the real problem
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ShmConnectException("interrupted while attaching to the shared mapping", e);
        }
    }

    /** Unmaps the header, control lines and slots and closes the channel; the arenas stay mapped while referenced. */
    @Override
    public void close() {
        try {
            arena.close();
        } finally {
            closeQuietly(channel);
        }
    }
}
