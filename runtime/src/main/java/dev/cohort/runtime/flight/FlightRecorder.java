package dev.cohort.runtime.flight;

import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.DataType;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;

/**
 * This rank's last collectives, in a ring of fixed-size records: what each was, when it was issued
 * and when it settled, or that it failed. Recording allocates nothing. A recorder backed by a file
 * ({@value #ENV_DIR}) is a memory-mapped ring that other processes read while this one runs, and
 * after it stopped, hung or died: {@link FlightRecords} reads it, {@link FlightReport} tells from
 * every rank's ring which rank stopped where.
 *
 * <p>The world group's calls are on record, and those of the subgroups made from it ({@link
 * #group}), each record naming its group.
 *
 * <p>Layout (little-endian): a {@value #HEADER}-byte header (magic, version, rank, size, capacity,
 * pid, records written, start time, {@link dev.cohort.runtime.HostIdentity host}, engine, then a
 * table of the last {@value #GROUPS} subgroups' numbers and names), then {@code capacity} records of
 * {@value #RECORD} bytes: ticket + 1 (0: never written), sequence, issued, started and settled times
 * (epoch nanoseconds; started is 0 where the engine runs a call as it is issued, settled 0 while
 * pending), bytes, elements, kind, type, state, peer or root, tag, group (0: the world).
 */
public final class FlightRecorder {

    /** Where each rank writes its ring, {@code rank-<rank>.flight}; unset: rings in memory only. */
    public static final String ENV_DIR = "COHORT_FLIGHT_DIR";
    /** How many records each rank keeps (default {@value #DEFAULT_CAPACITY}); 0 records nothing. */
    public static final String ENV_RECORDS = "COHORT_FLIGHT_RECORDS";

    public static final int DEFAULT_CAPACITY = 4096;

    static final long MAGIC = 0x4652_5452_4f48_4f43L; // "COHORTFR", little-endian
    static final int VERSION = 2;
    static final int HEADER = 1024;
    static final int RECORD = 72;
    static final int GROUPS = 12;

    // Header offsets.
    static final int H_VERSION = 8;
    static final int H_RANK = 12;
    static final int H_SIZE = 16;
    static final int H_CAPACITY = 20;
    static final int H_PID = 24;
    static final int H_WRITTEN = 32;
    static final int H_STARTED = 40;
    static final int H_HOST_LENGTH = 48;
    static final int H_HOST = 52;
    static final int HOST_MAX = 136;
    static final int H_ENGINE_LENGTH = 188;
    static final int H_ENGINE = 192;
    static final int ENGINE_MAX = 64;
    /** The group table: {@value #GROUPS} entries of {@value #GROUP_ENTRY} bytes (number, name length, name). */
    static final int H_GROUPS = 256;

    static final int GROUP_ENTRY = 64;
    static final int GROUP_NAME_MAX = GROUP_ENTRY - 8;

    // Record offsets.
    static final int R_TICKET = 0;
    static final int R_SEQUENCE = 8;
    static final int R_ISSUED = 16;
    static final int R_STARTED = 24;
    static final int R_SETTLED = 32;
    static final int R_BYTES = 40;
    static final int R_ELEMENTS = 48;
    static final int R_KIND = 56;
    static final int R_TYPE = 57;
    static final int R_STATE = 58;
    static final int R_PEER = 60;
    static final int R_TAG = 64;
    static final int R_GROUP = 68;

    static final byte PENDING = 1;
    static final byte DONE = 2;
    static final byte FAILED = 3;

    private final ByteBuffer ring;
    private final int capacity;
    private final AtomicLong tickets = new AtomicLong();
    private final long startEpochNanos;
    private final long startNanoTime;
    private final Path file;
    private final int rank;
    private final String engine;
    /** Subgroups' names by number, for the JFR events (the table in the header keeps the last few). */
    private final Map<Integer, String> groupNames = new java.util.HashMap<>(Map.of(0, WORLD));

    private int groupsNamed;
    /** By {@link dev.cohort.api.collective.OpKind}: calls issued, their bytes, calls settled and their time. */
    private final long[] calls = new long[KINDS];

    private final long[] bytes = new long[KINDS];
    private final long[] settledCalls = new long[KINDS];
    private final long[] settledNanos = new long[KINDS];
    private static final int KINDS = dev.cohort.api.collective.OpKind.values().length;
    /** The JFR events of calls in flight, by slot; made when a recording first takes them. */
    private CollectiveEvent[] events;

    /** The name of the job's world group in records and events. */
    public static final String WORLD = "world";

    private FlightRecorder(ByteBuffer ring, int rank, int size, int capacity, Path file, String engine) {
        this.ring = ring.order(ByteOrder.LITTLE_ENDIAN);
        this.capacity = capacity;
        this.file = file;
        this.rank = rank;
        this.engine = Objects.requireNonNull(engine, "engine");
        java.time.Instant now = java.time.Instant.now();
        this.startEpochNanos = now.getEpochSecond() * 1_000_000_000L + now.getNano();
        this.startNanoTime = System.nanoTime();
        ring.putLong(0, MAGIC);
        ring.putInt(H_VERSION, VERSION);
        ring.putInt(H_RANK, rank);
        ring.putInt(H_SIZE, size);
        ring.putInt(H_CAPACITY, capacity);
        ring.putLong(H_PID, ProcessHandle.current().pid());
        ring.putLong(H_WRITTEN, 0);
        ring.putLong(H_STARTED, startEpochNanos);
        putString(H_HOST_LENGTH, H_HOST, HOST_MAX, dev.cohort.runtime.HostIdentity.current());
        putString(H_ENGINE_LENGTH, H_ENGINE, ENGINE_MAX, engine);
    }

    /** Puts {@code value}'s UTF-8 bytes, cut to {@code max}, at {@code at}, their length at {@code lengthAt}. */
    private void putString(int lengthAt, int at, int max, String value) {
        byte[] bytes = value.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        int length = Math.min(bytes.length, max);
        ring.putInt(lengthAt, length);
        ring.put(at, bytes, 0, length);
    }

    /** A ring in this process's memory, for {@code rank} of a group of {@code size} run by {@code engine}. */
    public static FlightRecorder inMemory(int rank, int size, int capacity, String engine) {
        requireCapacity(capacity);
        return new FlightRecorder(ByteBuffer.allocate(bytes(capacity)), rank, size, capacity, null, engine);
    }

    /**
     * A ring in {@code file} (created, or replaced whole), mapped into memory: readable by other
     * processes. It is made under another name and moved into place, so a process that still maps
     * the file it replaces (a rank of an earlier generation) keeps its own, whole.
     */
    public static FlightRecorder inFile(Path file, int rank, int size, int capacity, String engine) {
        requireCapacity(capacity);
        Path target = file.toAbsolutePath();
        Path made = target.resolveSibling(
                target.getFileName() + "." + ProcessHandle.current().pid() + ".new");
        try {
            Files.createDirectories(target.getParent());
            FlightRecorder recorder;
            try (FileChannel channel = FileChannel.open(
                    made,
                    StandardOpenOption.CREATE,
                    StandardOpenOption.TRUNCATE_EXISTING,
                    StandardOpenOption.READ,
                    StandardOpenOption.WRITE)) {
                ByteBuffer mapped = channel.map(FileChannel.MapMode.READ_WRITE, 0, bytes(capacity));
                recorder = new FlightRecorder(mapped, rank, size, capacity, file, engine);
            }
            Files.move(made, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            return recorder;
        } catch (IOException e) {
            try {
                Files.deleteIfExists(made);
            } catch (IOException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw new UncheckedIOException("cannot make the flight record " + file + ": " + e.getMessage(), e);
        }
    }

    /**
     * The recorder of {@code rank} of a job of {@code size} on {@code engine} as {@code env} configures it: in
     * {@value #ENV_DIR}'s {@code rank-<rank>.flight} where set, else in memory; none when
     * {@value #ENV_RECORDS} is 0.
     *
     * @throws IllegalArgumentException when {@value #ENV_RECORDS} is not a number of records
     */
    public static java.util.Optional<FlightRecorder> forJob(
            Map<String, String> env, int rank, int size, String engine) {
        int capacity = DEFAULT_CAPACITY;
        String records = env.get(ENV_RECORDS);
        if (records != null && !records.isBlank()) {
            try {
                capacity = Integer.parseInt(records.trim());
            } catch (NumberFormatException e) {
                capacity = -1;
            }
            if (capacity < 0 || capacity > 1 << 24) {
                throw new IllegalArgumentException(ENV_RECORDS + " must be a number of records from 0 (record "
                        + "nothing) to " + (1 << 24) + ", got '" + records + "'");
            }
        }
        if (capacity == 0) {
            return java.util.Optional.empty();
        }
        String dir = env.get(ENV_DIR);
        return java.util.Optional.of(
                dir == null || dir.isBlank()
                        ? inMemory(rank, size, capacity, engine)
                        : inFile(Path.of(dir).resolve(fileName(rank)), rank, size, capacity, engine));
    }

    /** The name of {@code rank}'s ring in a folder of rings. */
    public static String fileName(int rank) {
        return "rank-" + rank + ".flight";
    }

    /**
     * The number the calls of the subgroup named {@code name} are recorded under (its resources'
     * scope, the same on each of its ranks: "world/split-0-color-1"), its name put in the header's
     * table. The world is 0.
     */
    public synchronized int group(String name) {
        int number = name.hashCode() & 0x7fff_ffff | 1;
        if (groupNames.put(number, name) == null) {
            int at = H_GROUPS + (groupsNamed++ % GROUPS) * GROUP_ENTRY;
            ring.putInt(at, 0); // invalid while being written
            putString(at + 4, at + 8, GROUP_NAME_MAX, name);
            ring.putInt(at, number);
        }
        return number;
    }

    /**
     * Records that {@code call} of the world group is being issued; returns its ticket for {@link
     * #settled}. Called before the engine starts it, so that a call that never returns is on record.
     */
    public long issued(Collective call) {
        return issued(call, 0);
    }

    /** As {@link #issued(Collective)}, for a call of the group numbered {@code group} ({@link #group}). */
    public long issued(Collective call, int group) {
        long ticket = tickets.getAndIncrement();
        int at = offset(ticket);
        synchronized (this) {
            ring.putLong(at + R_TICKET, 0); // invalid while being written
            ring.putLong(at + R_SEQUENCE, call.sequence());
            ring.putLong(at + R_ISSUED, now());
            ring.putLong(at + R_STARTED, 0);
            ring.putLong(at + R_SETTLED, 0);
            DataType type = call.dataType();
            var buffer = call.input() != null ? call.input() : call.output();
            ring.putLong(at + R_BYTES, buffer == null ? 0 : buffer.byteSize());
            calls[call.kind().ordinal()]++;
            bytes[call.kind().ordinal()] += buffer == null ? 0 : buffer.byteSize();
            ring.putLong(at + R_ELEMENTS, buffer == null ? 0 : buffer.count());
            ring.put(at + R_KIND, (byte) call.kind().ordinal());
            ring.put(at + R_TYPE, (byte) (type == null ? -1 : type.ordinal()));
            ring.put(at + R_STATE, PENDING);
            ring.putInt(at + R_PEER, call.root());
            ring.putInt(at + R_TAG, call.tag());
            ring.putInt(at + R_GROUP, group);
            ring.putLong(at + R_TICKET, ticket + 1);
            ring.putLong(H_WRITTEN, Math.max(ring.getLong(H_WRITTEN), ticket + 1));
            if (CollectiveEvent.recorded()) {
                begin(slot(ticket), call, group, type, buffer == null ? 0 : buffer.byteSize());
            } else if (events != null) {
                events[slot(ticket)] = null;
            }
        }
        return ticket;
    }

    /**
     * Records that the engine started the call of {@code ticket} at {@code nanoTime} ({@link
     * System#nanoTime()}), after it waited in the engine's queue; nothing if the ring has moved past
     * it. Engines that start calls as they are issued need not call it. Without a lock (a call is
     * started once, on the thread that then settles it, or before it was on record): one write.
     */
    public void started(long ticket, long nanoTime) {
        int at = offset(ticket);
        if (ring.getLong(at + R_TICKET) == ticket + 1) {
            ring.putLong(at + R_STARTED, Math.max(ring.getLong(at + R_ISSUED), epochNanos(nanoTime)));
        }
    }

    /** Records that the call of {@code ticket} settled, failed or not; nothing if the ring has moved past it. */
    public void settled(long ticket, boolean failed) {
        int at = offset(ticket);
        synchronized (this) {
            if (ring.getLong(at + R_TICKET) == ticket + 1 && ring.get(at + R_STATE) == PENDING) {
                long now = now();
                ring.putLong(at + R_SETTLED, now);
                int kind = ring.get(at + R_KIND);
                settledCalls[kind]++;
                settledNanos[kind] += now - ring.getLong(at + R_ISSUED);
                ring.put(at + R_STATE, failed ? FAILED : DONE);
                CollectiveEvent event = events == null ? null : events[slot(ticket)];
                if (event != null) {
                    events[slot(ticket)] = null;
                    event.end();
                    long started = ring.getLong(at + R_STARTED);
                    long issuedAt = ring.getLong(at + R_ISSUED);
                    event.queued = started == 0 ? 0 : started - issuedAt;
                    event.wire = now - (started == 0 ? issuedAt : started);
                    event.failed = failed;
                    event.commit();
                }
            }
        }
    }

    /** Calls of {@code kind} issued so far (the ring forgets them; this does not). */
    public synchronized long calls(dev.cohort.api.collective.OpKind kind) {
        return calls[kind.ordinal()];
    }

    /** Bytes of this rank's buffers in the calls of {@code kind} issued so far. */
    public synchronized long bytes(dev.cohort.api.collective.OpKind kind) {
        return bytes[kind.ordinal()];
    }

    /** Calls of {@code kind} seen settled so far (done or failed). */
    public synchronized long settledCalls(dev.cohort.api.collective.OpKind kind) {
        return settledCalls[kind.ordinal()];
    }

    /** Their time from issue to settle, in nanoseconds, added up. */
    public synchronized long settledNanos(dev.cohort.api.collective.OpKind kind) {
        return settledNanos[kind.ordinal()];
    }

    /** This ring as read now. */
    public FlightRecords.Ring read() {
        synchronized (this) {
            return FlightRecords.parse(ring.duplicate().order(ByteOrder.LITTLE_ENDIAN), String.valueOf(file));
        }
    }

    /** The file this ring is in, if any. */
    public java.util.Optional<Path> file() {
        return java.util.Optional.ofNullable(file);
    }

    public int capacity() {
        return capacity;
    }

    private int offset(long ticket) {
        return HEADER + slot(ticket) * RECORD;
    }

    private int slot(long ticket) {
        return (int) (ticket % capacity);
    }

    /** Starts the JFR event of the call in {@code slot} (a recording takes them). */
    private void begin(int slot, Collective call, int group, DataType type, long bytes) {
        if (events == null) {
            events = new CollectiveEvent[capacity];
        }
        CollectiveEvent event = new CollectiveEvent();
        event.rank = rank;
        event.engine = engine;
        event.group = groupNames.getOrDefault(group, "#" + group);
        event.kind = call.kind().label();
        event.sequence = call.sequence();
        event.bytes = bytes;
        event.type = type == null ? null : type.label();
        event.peer = call.root();
        event.begin();
        events[slot] = event;
    }

    private long now() {
        return epochNanos(System.nanoTime());
    }

    private long epochNanos(long nanoTime) {
        return startEpochNanos + (nanoTime - startNanoTime);
    }

    private static int bytes(int capacity) {
        return HEADER + capacity * RECORD;
    }

    private static void requireCapacity(int capacity) {
        if (capacity < 1 || capacity > 1 << 24) {
            throw new IllegalArgumentException(
                    "a flight recorder keeps 1 to " + (1 << 24) + " records, got " + capacity);
        }
    }
}
