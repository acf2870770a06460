package dev.cohort.runtime.flight;

import static dev.cohort.runtime.flight.FlightRecorder.*;

import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.OpKind;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;

/** Reads the rings {@link FlightRecorder}s write: one file, or a folder of every rank's. */
public final class FlightRecords {

    private FlightRecords() {}

    /** What became of a call. */
    public enum State {
        PENDING,
        DONE,
        FAILED
    }

    /**
     * One recorded call.
     *
     * @param group   {@value FlightRecorder#WORLD}, or the subgroup's name (its number where the
     *                ring's table no longer has it)
     * @param peer    the root, or the peer of a send or recv (in its group's ranks); -1 where there is none
     * @param tag     a send's or recv's tag; -1 for collectives
     * @param started when the engine started it, where it queues calls and did; the rest of its
     *                time until issued was spent queued
     */
    public record Call(
            long ticket,
            String group,
            long sequence,
            OpKind kind,
            DataType type,
            long bytes,
            long elements,
            int peer,
            int tag,
            Instant issued,
            Optional<Instant> started,
            Optional<Instant> settled,
            State state) {

        /** Whether it is a call of the job's world group. */
        public boolean inWorld() {
            return group.equals(WORLD);
        }

        /**
         * "allreduce #1043 (16 MiB float32)", "recv #3 from rank 1 (4 B int32, tag 7)", "barrier
         * #9", "allreduce #7 of world/split-0-color-1 (4 KiB float32)".
         */
        public String describe() {
            StringBuilder s = new StringBuilder(kind.label()).append(" #").append(sequence);
            if (!inWorld()) {
                s.append(" of ").append(group);
            }
            if (kind.isPointToPoint()) {
                s.append(kind == OpKind.SEND ? " to rank " : " from rank ").append(peer);
            }
            if (type != null) {
                s.append(" (").append(size(bytes)).append(' ').append(type.label());
                if (kind.isPointToPoint()) {
                    s.append(", tag ").append(tag);
                } else if (peer >= 0) {
                    s.append(", root ").append(peer);
                }
                s.append(')');
            }
            return s.toString();
        }

        /** What every rank must agree on for the same sequence number: kind, type and size. */
        String shape() {
            return group + "/" + kind + "/" + type + "/" + bytes + "/" + peer;
        }

        /** How long it has been pending at {@code now}, or took. */
        public Duration took(Instant now) {
            return Duration.between(issued, settled.orElse(now));
        }

        /** How long it waited in the engine's queue before it started (zero where it was not queued). */
        public Duration queued(Instant now) {
            return Duration.between(issued, started.orElse(settled.isPresent() ? issued : now));
        }
    }

    /**
     * One rank's ring as read.
     *
     * @param source where it was read from
     * @param engine the engine that ran the calls
     * @param calls  its calls, oldest first
     */
    public record Ring(
            String source,
            int rank,
            int size,
            long pid,
            String host,
            String engine,
            Instant started,
            long written,
            List<Call> calls) {

        /** The world group's collectives (not sends and receives, nor subgroups' calls), oldest first. */
        public List<Call> collectives() {
            return calls.stream()
                    .filter(c -> c.inWorld() && !c.kind().isPointToPoint())
                    .toList();
        }

        /** The last collective of the world group this rank issued, if any. */
        public Optional<Call> lastCollective() {
            List<Call> c = collectives();
            return c.isEmpty() ? Optional.empty() : Optional.of(c.get(c.size() - 1));
        }

        /** Whether it ran on this host (so its pid means something here). */
        public boolean onThisHost() {
            return host.equals(dev.cohort.runtime.HostIdentity.current());
        }
    }

    /** Reads the ring in {@code file}. */
    public static Ring read(Path file) throws IOException {
        ByteBuffer bytes = ByteBuffer.wrap(Files.readAllBytes(file));
        return parse(bytes, file.toString());
    }

    /**
     * Reads every {@code rank-<r>.flight} in {@code dir}, by rank; files that are not rings, or are
     * half written, are skipped.
     */
    public static List<Ring> readAll(Path dir) throws IOException {
        List<Ring> rings = new ArrayList<>();
        if (!Files.isDirectory(dir)) {
            return rings;
        }
        try (var files = Files.list(dir)) {
            for (Path f : files.filter(p -> p.getFileName().toString().matches("rank-\\d+\\.flight"))
                    .toList()) {
                try {
                    rings.add(read(f));
                } catch (IOException | IllegalArgumentException e) {
                    // Being made, or not ours: the report names ranks without a ring.
                }
            }
        }
        rings.sort(Comparator.comparingInt(Ring::rank));
        return rings;
    }

    static Ring parse(ByteBuffer buffer, String source) {
        ByteBuffer b = buffer.order(ByteOrder.LITTLE_ENDIAN);
        if (b.limit() < HEADER || b.getLong(0) != MAGIC) {
            throw new IllegalArgumentException(source + " is not a flight record of Cohort's");
        }
        if (b.getInt(H_VERSION) != VERSION) {
            throw new IllegalArgumentException(
                    source + " is a flight record of version " + b.getInt(H_VERSION) + "; this reads " + VERSION);
        }
        int capacity = b.getInt(H_CAPACITY);
        if (capacity < 1 || b.limit() < HEADER + (long) capacity * RECORD) {
            throw new IllegalArgumentException(source + " is cut short (" + b.limit() + " bytes)");
        }
        java.util.Map<Integer, String> groups = new java.util.HashMap<>();
        groups.put(0, WORLD);
        for (int g = 0; g < GROUPS; g++) {
            int at = H_GROUPS + g * GROUP_ENTRY;
            if (b.getInt(at) != 0) {
                groups.put(b.getInt(at), string(b, at + 4, at + 8, GROUP_NAME_MAX));
            }
        }
        long written = b.getLong(H_WRITTEN);
        List<Call> calls = new ArrayList<>();
        for (long t = Math.max(0, written - capacity); t < written; t++) {
            int at = HEADER + (int) (t % capacity) * RECORD;
            if (b.getLong(at + R_TICKET) != t + 1) {
                continue; // overwritten or being written
            }
            int kind = b.get(at + R_KIND);
            int type = b.get(at + R_TYPE);
            long started = b.getLong(at + R_STARTED);
            long settled = b.getLong(at + R_SETTLED);
            int group = b.getInt(at + R_GROUP);
            State state = switch (b.get(at + R_STATE)) {
                case DONE -> State.DONE;
                case FAILED -> State.FAILED;
                default -> State.PENDING;
            };
            if (kind < 0 || kind >= OpKind.values().length || type >= DataType.values().length) {
                continue;
            }
            calls.add(new Call(
                    t,
                    groups.getOrDefault(group, "group #" + group),
                    b.getLong(at + R_SEQUENCE),
                    OpKind.values()[kind],
                    type < 0 ? null : DataType.values()[type],
                    b.getLong(at + R_BYTES),
                    b.getLong(at + R_ELEMENTS),
                    b.getInt(at + R_PEER),
                    b.getInt(at + R_TAG),
                    instant(b.getLong(at + R_ISSUED)),
                    started == 0 ? Optional.empty() : Optional.of(instant(started)),
                    settled == 0 ? Optional.empty() : Optional.of(instant(settled)),
                    state));
        }
        return new Ring(
                source,
                b.getInt(H_RANK),
                b.getInt(H_SIZE),
                b.getLong(H_PID),
                string(b, H_HOST_LENGTH, H_HOST, HOST_MAX),
                string(b, H_ENGINE_LENGTH, H_ENGINE, ENGINE_MAX),
                instant(b.getLong(H_STARTED)),
                written,
                List.copyOf(calls));
    }

    private static String string(ByteBuffer b, int lengthAt, int at, int max) {
        byte[] bytes = new byte[Math.max(0, Math.min(b.getInt(lengthAt), max))];
        b.get(at, bytes);
        return new String(bytes, java.nio.charset.StandardCharsets.UTF_8);
    }

    private static Instant instant(long epochNanos) {
        return Instant.ofEpochSecond(
                Math.floorDiv(epochNanos, 1_000_000_000L), Math.floorMod(epochNanos, 1_000_000_000L));
    }

    /** "16 MiB", "1.5 KiB", "4 B". */
    static String size(long bytes) {
        String[] units = {"B", "KiB", "MiB", "GiB", "TiB"};
        double v = bytes;
        int u = 0;
        while (v >= 1024 && u < units.length - 1) {
            v /= 1024;
            u++;
        }
        return (v == Math.rint(v) ? Long.toString((long) v) : String.format(java.util.Locale.ROOT, "%.1f", v)) + " "
                + units[u];
    }
}
