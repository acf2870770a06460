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
 * sets it on every rank), how far each rank's wall clock stands from rank 0's, and records it as
 * a {@link ClockOffsetEvent}. Rank 0 answers each other rank's pings in turn over the world group
 * (messages, not collectives); a rank keeps the exchange with the shortest round trip, as NTP
 * does: offset = the middle of its send and receive, minus rank 0's time between them.
 */
public final class ClockOffsets implements JobObserver {

    /** Pings a rank sends; the shortest round trip of them gives its offset. */
    static final int ROUNDS = 8;
    /** The message tag of the pings and their answers. */
    static final int TAG = 0x7C10C;

    @Override
    public AutoCloseable joined(AbstractProcessGroup world, Topology topology, Map<String, String> env) {
        String trace = env.get(Tracing.ENV_TRACE);
        if (trace == null || trace.isBlank() || world.size() < 2) {
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

    /** The wall clock, in nanoseconds since the epoch (what JFR's event times are read against). */
    static long now() {
        Instant t = Instant.now();
        return t.getEpochSecond() * 1_000_000_000L + t.getNano();
    }
}
