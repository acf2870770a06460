package dev.cohort.shm.region;

import static dev.cohort.shm.region.ShmLayout.HEADER_BYTES;
import static dev.cohort.shm.region.ShmLayout.H_ARENA;
import static dev.cohort.shm.region.ShmLayout.H_ATTACHED;
import static dev.cohort.shm.region.ShmLayout.H_CREATOR;
import static dev.cohort.shm.region.ShmLayout.H_MAGIC;
import static dev.cohort.shm.region.ShmLayout.H_SEGMENT;
import static dev.cohort.shm.region.ShmLayout.H_TOTAL;
import static dev.cohort.shm.region.ShmLayout.H_VERSION;
import static dev.cohort.shm.region.ShmLayout.H_WORLD;
import static dev.cohort.shm.region.ShmLayout.LONG;
import static dev.cohort.shm.region.ShmLayout.MAGIC;
import static dev.cohort.shm.region.ShmLayout.VERSION;

import dev.cohort.shm.ShmConnectException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
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
 * This rank's attachment to one group's shared mapping of a {@code /dev/shm} file: how the ranks
 * of the host create, map, validate and join it, and who owns the mapping afterwards. Where
 * things lie in it is {@link ShmLayout}'s.
 *
 * <p>The file has two mappings: the header, control lines and slots with an arena that
 * {@link #close()} unmaps, and the arenas with an automatic one, unmapped only once no buffer
 * handed out from them is reachable (native tensors may wrap them; see {@code ShmArena}). The
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
public final class ShmAttachment implements AutoCloseable {

    private final ShmLayout layout;
    private final Path path;
    private final int rank;
    private final FileChannel channel;
    private final Arena arena;
    private final Object fileKey;

    private ShmAttachment(
            Arena arena,
            MemorySegment memory,
            FileChannel channel,
            Path path,
            Object fileKey,
            int rank,
            ShmLayout layout)
            throws IOException {
        this.arena = arena;
        this.channel = channel;
        this.path = path;
        this.fileKey = fileKey;
        this.rank = rank;
        this.layout = layout.wrap(
                memory,
                layout.arenaBytes() == 0
                        ? null
                        : channel.map(
                                FileChannel.MapMode.READ_WRITE,
                                layout.arenasOffset(),
                                layout.size() * layout.arenaStride(),
                                Arena.ofAuto()));
    }

    /** The mapping, as a layout. */
    public ShmLayout layout() {
        return layout;
    }

    /** This rank in the group. */
    public int rank() {
        return rank;
    }

    /** The file (unlinked once every rank attached). */
    public Path path() {
        return path;
    }

    /** The file's channel, open while the group lives (the arena claims pages through it). */
    public FileChannel channel() {
        return channel;
    }

    /** Tells the peers this rank gave up on the group, so they fail at once instead of at their timeout. */
    public void abort() {
        try {
            layout.abort(rank);
        } catch (IllegalStateException closed) {
            // already unmapped
        }
    }

    /**
     * Refuses, naming the sizes, where {@code dir}'s file system has less room than the slots need:
     * their pages are claimed as the collectives first touch them, and a tmpfs out of room would
     * then fault (the arenas claim theirs as buffers are allocated, and fall back when they cannot).
     */
    private static void checkRoom(Path dir, long needed, String who) {
        long free;
        try {
            free = Files.getFileStore(dir).getUsableSpace();
        } catch (IOException e) {
            return; // the mapping's own creation names what is wrong with dir
        }
        if (free < needed) {
            throw new ShmConnectException(who + ": " + dir + " has " + mib(free) + " free, and the shared mapping's "
                    + "slots need " + mib(needed) + "; give it more room (a container's --shm-size, or fewer ranks "
                    + "on this host) or use --distributed-backend tcp");
        }
    }

    private static String mib(long bytes) {
        return String.format(java.util.Locale.ROOT, "%.1f MiB", bytes / 1048576.0);
    }

    /**
     * Creates (local rank 0) or opens the mapping at {@code path} and attaches this rank, waiting
     * at most {@code timeout} for the file and for every rank to attach.
     */
    public static ShmAttachment attach(Path path, int rank, ShmLayout layout, Duration timeout, String who) {
        long deadline = System.nanoTime() + timeout.toNanos();
        ShmAttachment region =
                rank == 0 ? create(path, layout, deadline, who) : open(path, rank, layout, deadline, who);
        try {
            region.join(deadline, timeout, who);
            return region;
        } catch (RuntimeException e) {
            region.deleteIfOurs();
            region.close();
            throw e;
        }
    }

    private static ShmAttachment create(Path path, ShmLayout layout, long deadline, String who) {
        long total = layout.totalBytes();
        long self = ProcessHandle.current().pid();
        checkRoom(path.getParent(), layout.arenasOffset(), who);
        for (int attempt = 0; ; attempt++) {
            try {
                Files.createFile(
                        path, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
                break;
            } catch (FileAlreadyExistsException e) {
                Optional<Long> creator = creatorOf(path);
                if (creator.isPresent() && creator.get() != self && alive(creator.get())) {
                    throw new ShmConnectException(who + ": " + path + " belongs to a running job (pid " + creator.get()
                            + "); two jobs on one host need different COHORT_RUN_ID or MASTER_PORT values");
                }
                if (creator.isEmpty() && attempt < 50 && System.nanoTime() < deadline) {
                    sleep(20); // perhaps another creator is still writing its header
                    continue;
                }
                deleteQuietly(path); // stale: its creator died before every rank attached
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
            MemorySegment m = ch.map(FileChannel.MapMode.READ_WRITE, 0, layout.arenasOffset(), arena);
            ShmAttachment region = new ShmAttachment(arena, m, ch, path, key, 0, layout);
            m.set(ValueLayout.JAVA_LONG, H_VERSION, VERSION);
            m.set(ValueLayout.JAVA_LONG, H_WORLD, layout.size());
            m.set(ValueLayout.JAVA_LONG, H_SEGMENT, layout.segmentBytes());
            m.set(ValueLayout.JAVA_LONG, H_TOTAL, total);
            m.set(ValueLayout.JAVA_LONG, H_CREATOR, self);
            m.set(ValueLayout.JAVA_LONG, H_ARENA, layout.arenaBytes());
            LONG.setRelease(m, H_MAGIC, MAGIC);
            return region;
        } catch (IOException | RuntimeException e) {
            arena.close();
            closeQuietly(ch);
            deleteQuietly(path);
            throw new ShmConnectException(who + ": cannot map " + path + " (" + total + " bytes): " + e, e);
        }
    }

    private static ShmAttachment open(Path path, int rank, ShmLayout layout, long deadline, String who) {
        long total = layout.totalBytes();
        String lastState = "the file does not exist";
        while (true) {
            if (System.nanoTime() - deadline > 0) {
                throw new ShmConnectException(
                        who + ": local rank 0 did not create " + path + " in time (" + lastState
                                + "); is local rank 0 running with the same COHORT_RUN_ID, COHORT_RESTART_COUNT and MASTER_PORT?");
            }
            FileChannel ch = null;
            Arena arena = null;
            try {
                ch = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE);
                Object key =
                        Files.readAttributes(path, BasicFileAttributes.class).fileKey();
                if (ch.size() < HEADER_BYTES) {
                    lastState = "it has " + ch.size() + " bytes";
                } else {
                    String mismatch;
                    try (Arena header = Arena.ofConfined()) {
                        MemorySegment h = ch.map(FileChannel.MapMode.READ_ONLY, 0, HEADER_BYTES, header);
                        mismatch = (long) LONG.getAcquire(h, H_MAGIC) != MAGIC
                                ? ""
                                : mismatch(h, layout.size(), layout.segmentBytes(), layout.arenaBytes(), total);
                    }
                    if (mismatch == null && ch.size() >= total) {
                        arena = Arena.ofShared();
                        MemorySegment m = ch.map(FileChannel.MapMode.READ_WRITE, 0, layout.arenasOffset(), arena);
                        ShmAttachment region = new ShmAttachment(arena, m, ch, path, key, rank, layout);
                        ch = null; // the region owns them now
                        arena = null;
                        return region;
                    }
                    if (mismatch != null && !mismatch.isEmpty()) {
                        throw new ShmConnectException(
                                who + ": " + path + " was created for another group: " + mismatch);
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
            return "segment of " + segment + " bytes, this rank uses " + segmentBytes
                    + " (--shm-segment-kib must agree)";
        }
        if (arena != arenaBytes || bytes != total) {
            return "arena of " + arena + " bytes per rank, this rank uses " + arenaBytes
                    + " (--shm-arena-mib must agree)";
        }
        return null;
    }

    /** Claims this rank's pid slot, counts itself in (the last one unlinks the file), waits for all. */
    private void join(long deadline, Duration timeout, String who) {
        long self = ProcessHandle.current().pid();
        MemorySegment memory = layout.memory();
        int size = layout.size();
        long previous = (long) LONG.compareAndExchange(memory, layout.pidOffset(rank), 0L, self);
        if (previous != 0 && previous != self) {
            throw new ShmConnectException(who + ": rank " + rank + "'s slot in " + path + " is taken by pid " + previous
                    + "; two jobs on one host need different COHORT_RUN_ID or MASTER_PORT values");
        }
        long attached = (long) LONG.getAndAdd(memory, H_ATTACHED, 1L) + 1;
        if (attached == size) {
            deleteIfOurs();
        }
        for (int r = 0; r < size; r++) {
            while (layout.pid(r) == 0) {
                if (System.nanoTime() - deadline > 0) {
                    throw new ShmConnectException(who + ": rank " + r + " did not attach to " + path + " within "
                            + timeout + " (is it started, on this host, with the same COHORT_RUN_ID, and does it run "
                            + "the same backend? `auto` picks shm only on JDK 22 or newer)");
                }
                long creator = memory.get(ValueLayout.JAVA_LONG, H_CREATOR);
                if (!alive(creator)) {
                    throw new ShmConnectException(
                            who + ": local rank 0 (pid " + creator + ") died while the ranks attached");
                }
                sleep(1);
            }
        }
    }

    /** Unlinks the file if the name still refers to the file this rank mapped. */
    public void deleteIfOurs() {
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

    public static boolean alive(long pid) {
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
