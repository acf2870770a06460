package dev.cohort.runtime.flight;

import dev.cohort.api.Topology;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.runtime.AbstractProcessGroup;
import dev.cohort.runtime.JobObserver;
import java.time.Instant;
import java.util.Map;

/**
 * Measures, when a traced job joins ({@value Tracing#ENV_TRACE} set, as {@code cohort run --trace}
 * sets it on every rank; or {@value #ENV_CHECK}), how far each rank's wall clock stands from rank 0's, and records it as
 * a {@link ClockOffsetEvent}. Rank 0 answers each other rank's pings in turn over the world group
 * (messages, not collectives); a rank keeps the exchange with the shortest round trip, as NTP
 * does: offset = the middle of its send and receive, minus rank 0's time between them.
 */
public final class ClockOffsets implements JobObserver {

    /** Pings a rank sends; the shortest round trip of them gives its offset. */
    static final int ROUNDS = 8;
    /** The message tag of the pings and their answers. */
    static final int TAG = 0x7C10C;

    /**
     * Set on every rank of a job ({@code cohort doctor} does) to measure the offsets without a
     * trace, each rank other than 0 logging its own.
     */
    public static final String ENV_CHECK = "COHORT_CLOCK_CHECK";

    private static final System.Logger LOG = System.getLogger(ClockOffsets.class.getName());

    @Override
    public AutoCloseable joined(AbstractProcessGroup world, Topology topology, Map<String, String> env) {
        boolean check = isSet(env.get(ENV_CHECK));
        if (!(check || isSet(env.get(Tracing.ENV_TRACE))) || world.size() < 2) {
            return () -> {};
        }
        ClockOffsetEvent event = new ClockOffsetEvent();
        event.rank = world.rank();
        if (world.rank() == 0) {
            answer(world);
        } else {
            long[] measured = measure(world);
            event.offset = measured[0];
            event.roundTrip = measured[1];
            if (check) {
                LOG.log(System.Logger.Level.INFO, describe(world.rank(), measured[0], measured[1]));
            }
        }
        event.commit();
        return () -> {};
    }

    /** Rank 0: answers {@link #ROUNDS} pings of each other rank, in rank order, with its time at each. */
    private static void answer(ProcessGroup world) {
        long[] ping = new long[1];
        long[] time = new long[1];
        for (int rank = 1; rank < world.size(); rank++) {
            for (int round = 0; round < ROUNDS; round++) {
                world.recv(DenseBuffer.of(ping), rank, TAG).await();
                time[0] = now();
                world.send(DenseBuffer.of(time), rank, TAG).await();
            }
        }
    }

    /** Another rank: its offset from rank 0 and the round trip it is good to, in nanoseconds. */
    private static long[] measure(ProcessGroup world) {
        long[] ping = new long[1];
        long[] answer = new long[1];
        long best = Long.MAX_VALUE;
        long offset = 0;
        for (int round = 0; round < ROUNDS; round++) {
            long sent = now();
            world.send(DenseBuffer.of(ping), 0, TAG).await();
            world.recv(DenseBuffer.of(answer), 0, TAG).await();
            long received = now();
            long roundTrip = received - sent;
            if (roundTrip < best) {
                best = roundTrip;
                offset = sent + roundTrip / 2 - answer[0];
            }
        }
        return new long[] {offset, best};
    }

    /** Finds {@link #describe}'s words in a log: the rank (group 1), the offset and the ± in ms (2, 3). */
    public static final java.util.regex.Pattern DESCRIBED = java.util.regex.Pattern.compile(
            "rank (\\d+)'s clock stands ([-+][0-9.]+) ms from rank 0's \\(± ([0-9.]+) ms\\)");

    /** What a rank's log says of its offset: "rank 1's clock stands -0.125 ms from rank 0's (± 0.152 ms)". */
    public static String describe(int rank, long offsetNanos, long roundTripNanos) {
        return String.format(
                java.util.Locale.ROOT,
                "rank %d's clock stands %+.3f ms from rank 0's (± %.3f ms)",
                rank,
                offsetNanos / 1e6,
                roundTripNanos / 2e6);
    }

    private static boolean isSet(String v) {
        return v != null && !v.isBlank();
    }

    /** The wall clock, in nanoseconds since the epoch (what JFR's event times are read against). */
    static long now() {
        Instant t = Instant.now();
        return t.getEpochSecond() * 1_000_000_000L + t.getNano();
    }
}
