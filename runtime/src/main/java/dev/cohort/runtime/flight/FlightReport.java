package dev.cohort.runtime.flight;

import dev.cohort.runtime.flight.FlightRecords.Call;
import dev.cohort.runtime.flight.FlightRecords.Ring;
import dev.cohort.runtime.flight.FlightRecords.State;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * What every rank's flight record shows of a job, in one line: which ranks stopped where, e.g.
 * "rank 3 completed allreduce #1042 and issued nothing since (its process 4711 is stopped); rank
 * 0-2 wait in allreduce #1043 (16 MiB float32) for 31 s".
 */
public final class FlightReport {

    private final List<Ring> rings;
    private final int size;
    private final Instant now;

    public FlightReport(List<Ring> rings, Instant now) {
        this.rings = List.copyOf(rings);
        this.size = rings.stream().mapToInt(Ring::size).max().orElse(0);
        this.now = now;
    }

    /** The report of the rings in {@code dir} ({@link FlightRecords#readAll}), as of now. */
    public static FlightReport of(Path dir) throws IOException {
        return new FlightReport(FlightRecords.readAll(dir), Instant.now());
    }

    /** Whether there is anything to report: a ring with at least one call. */
    public boolean isEmpty() {
        return rings.stream().allMatch(r -> r.calls().isEmpty());
    }

    /** The rings read, by rank. */
    public List<Ring> rings() {
        return rings;
    }

    /** Where each rank stands, the ranks that stand alike together, those behind first. */
    public String summary() {
        if (isEmpty()) {
            return "no rank recorded a call";
        }
        Map<Integer, Ring> byRank = new TreeMap<>();
        rings.forEach(r -> byRank.put(r.rank(), r));
        long furthest = rings.stream()
                .flatMap(r -> r.lastCollective().stream())
                .mapToLong(Call::sequence)
                .max()
                .orElse(-1);
        // Ranks that stand alike, ordered by where they stand (lowest sequence first).
        TreeMap<String, List<Integer>> alike = new TreeMap<>();
        Map<String, java.util.function.Function<Boolean, String>> said = new LinkedHashMap<>();
        for (int rank = 0; rank < size; rank++) {
            Ring ring = byRank.get(rank);
            String key;
            java.util.function.Function<Boolean, String> what;
            if (ring == null) {
                key = "0";
                what = one -> "left no flight record here";
            } else {
                Optional<Call> last = ring.lastCollective();
                Optional<Call> message = lastPendingBeside(ring);
                if (last.isEmpty()) {
                    key = "1";
                    what = one -> "issued no collective";
                } else {
                    Call c = last.get();
                    key = String.format("2%020d%s%s", c.sequence(), c.state(), c.shape());
                    // Waiting in a subgroup or for a message is where it stands, not "nothing since".
                    boolean behind = c.sequence() < furthest && message.isEmpty();
                    what = one -> where(c, behind, one);
                }
                if (message.isPresent()) {
                    key += "/" + message.get().describe();
                    var before = what;
                    what = one -> before.apply(one) + ", and " + (one ? "waits" : "wait") + " in "
                            + message.get().describe();
                }
            }
            alike.computeIfAbsent(key, k -> new ArrayList<>()).add(rank);
            said.put(key, what);
        }
        List<String> parts = new ArrayList<>();
        for (var e : alike.entrySet()) {
            List<Integer> ranks = e.getValue();
            String part = ranks(ranks) + " " + said.get(e.getKey()).apply(ranks.size() == 1);
            if (ranks.size() == 1 && byRank.containsKey(ranks.get(0))) {
                part += processState(byRank.get(ranks.get(0)));
            } else {
                // Several ranks alike: name those whose process stopped or exited.
                List<String> notes = new ArrayList<>();
                for (int rank : ranks) {
                    String state = byRank.containsKey(rank) ? processState(byRank.get(rank)) : "";
                    if (!state.isEmpty()) {
                        notes.add("rank " + rank + "'s " + state.substring(" (its ".length(), state.length() - 1));
                    }
                }
                part += notes.isEmpty() ? "" : " (" + String.join("; ", notes) + ")";
            }
            parts.add(part);
        }
        String mismatch = mismatch(furthest);
        return String.join("; ", parts) + mismatch;
    }

    /** The summary, then each rank's last {@code last} calls, oldest first. */
    public String details(int last) {
        StringBuilder s = new StringBuilder(summary());
        for (Ring r : rings) {
            s.append("\n\nrank ")
                    .append(r.rank())
                    .append(" of ")
                    .append(r.size())
                    .append(" (pid ")
                    .append(r.pid())
                    .append(", ")
                    .append(r.written())
                    .append(" calls recorded, ")
                    .append(r.source())
                    .append("):");
            List<Call> calls = r.calls();
            for (Call c : calls.subList(Math.max(0, calls.size() - last), calls.size())) {
                s.append("\n  ")
                        .append(String.format("%-8s", c.state().name().toLowerCase(java.util.Locale.ROOT)))
                        .append(' ')
                        .append(c.describe())
                        .append(", ")
                        .append(c.state() == State.PENDING ? "pending for " : "took ")
                        .append(duration(c.took(now)));
                Duration queued = c.queued(now);
                if (queued.toMillis() >= 1) {
                    s.append(" (queued ").append(duration(queued)).append(')');
                }
            }
        }
        return s.toString();
    }

    private String where(Call c, boolean behind, boolean one) {
        return switch (c.state()) {
            case DONE ->
                behind
                        ? "completed " + c.describe() + " and issued nothing since (" + duration(since(c)) + ")"
                        : "completed " + c.describe();
            case PENDING -> (one ? "waits" : "wait") + " in " + c.describe() + " for " + duration(c.took(now));
            case FAILED -> "failed in " + c.describe() + " after " + duration(c.took(now));
        };
    }

    private Duration since(Call c) {
        return Duration.between(c.settled().orElse(c.issued()), now);
    }

    /** Ranks whose calls of the same sequence number differ: they called different collectives. */
    private String mismatch(long sequence) {
        Map<String, List<Integer>> shapes = new LinkedHashMap<>();
        Map<String, String> described = new LinkedHashMap<>();
        for (Ring r : rings) {
            r.collectives().stream()
                    .filter(c -> c.sequence() == sequence)
                    .reduce((a, b) -> b)
                    .ifPresent(c -> {
                        shapes.computeIfAbsent(c.shape(), k -> new ArrayList<>())
                                .add(r.rank());
                        described.put(c.shape(), c.describe());
                    });
        }
        if (shapes.size() < 2) {
            return "";
        }
        List<String> parts = new ArrayList<>();
        shapes.forEach((shape, ranks) -> parts.add(ranks(ranks) + " " + described.get(shape)));
        return "; the ranks issued different calls as #" + sequence + ": " + String.join(", ", parts);
    }

    /** The last send, recv or subgroup's call, where it is still pending. */
    private static Optional<Call> lastPendingBeside(Ring ring) {
        List<Call> calls = ring.calls();
        for (int i = calls.size() - 1; i >= 0; i--) {
            Call c = calls.get(i);
            if (c.kind().isPointToPoint() || !c.inWorld()) {
                return c.state() == State.PENDING ? Optional.of(c) : Optional.empty();
            }
        }
        return Optional.empty();
    }

    /** " (its process 4711 is stopped)", " (its process 4711 has exited)", or "" where unknown or running. */
    static String processState(Ring ring) {
        if (!ring.onThisHost()) {
            return "";
        }
        Optional<ProcessHandle> p = ProcessHandle.of(ring.pid());
        if (p.isEmpty() || !p.get().isAlive()) {
            return " (its process " + ring.pid() + " has exited)";
        }
        try {
            String stat = java.nio.file.Files.readString(Path.of("/proc/" + ring.pid() + "/stat"));
            char state = stat.charAt(stat.lastIndexOf(')') + 2);
            if (state == 'T' || state == 't') {
                return " (its process " + ring.pid() + " is stopped)";
            }
            if (state == 'Z') {
                return " (its process " + ring.pid() + " has exited)";
            }
        } catch (IOException | RuntimeException e) {
            // Not Linux, or gone meanwhile.
        }
        return "";
    }

    /** "rank 3", "ranks 0-2", "ranks 0, 2, 5-7". */
    static String ranks(List<Integer> ranks) {
        if (ranks.size() == 1) {
            return "rank " + ranks.get(0);
        }
        List<String> runs = new ArrayList<>();
        int i = 0;
        while (i < ranks.size()) {
            int j = i;
            while (j + 1 < ranks.size() && ranks.get(j + 1) == ranks.get(j) + 1) {
                j++;
            }
            runs.add(
                    j == i
                            ? "" + ranks.get(i)
                            : j == i + 1 ? ranks.get(i) + ", " + ranks.get(j) : ranks.get(i) + "-" + ranks.get(j));
            i = j + 1;
        }
        return "ranks " + String.join(", ", runs);
    }

    /** "31 s", "850 ms", "2 min 5 s". */
    static String duration(Duration d) {
        long ms = Math.max(0, d.toMillis());
        if (ms < 1000) {
            return ms + " ms";
        }
        long s = Math.round(ms / 1000.0);
        return s < 120 ? s + " s" : s / 60 + " min " + s % 60 + " s";
    }
}
