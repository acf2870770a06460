package dev.cohort.shm;

import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.CollectiveException;
import dev.cohort.api.collective.CollectiveTimeoutException;
import dev.cohort.runtime.CallQueue;
import dev.cohort.runtime.RankNames;
import dev.cohort.runtime.WaitPolicy;
import dev.cohort.runtime.WaitPolicy.Phase;
import dev.cohort.shm.region.ShmLayout;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The group's barrier: one monotonic counter per rank on its own cache line. Entering phase
 * {@code p}, a rank stores {@code p} into its counter and acquire-loads the others' until all
 * reach {@code p}: everything a rank wrote before entering is visible to every rank after it.
 *
 * <p>Waiting spins with {@link Thread#onSpinWait()} for {@link #SPIN_NS}, then yields until
 * {@link #YIELD_NS}, then sleeps. On Linux a sleeper counts itself in the sleepers word of the rank
 * it waits for and sleeps on a {@link Futex} on that rank's counter, which the rank wakes after
 * storing its counter when the word is not zero: a long wait, such as hier's for its leader's step
 * between hosts, wakes once, when it ends (parking on a timer woke a rank every 20 µs–1 ms: at 2
 * hosts × 2 ranks on 2 CPUs the machine switched contexts half as often again). Elsewhere it
 * parks, {@link #PARK_NS} at first and twice as long each time up to {@link #PARK_LONG_WAIT_NS}.
 *
 * <p>A yield that does not come straight back ({@link #CONTENDED_NS}) shows another thread waiting
 * for this CPU (more ranks than CPUs, as with several ranks per host on a small machine): the rank
 * then sleeps at once rather than take the CPU from the ranks it waits for (parking on a timer, up
 * to {@link #PARK_MAX_NS}), and for {@link #CONTENDED_FOR_NS} afterwards its waits start with a
 * yield instead of spinning (4 ranks on 2 CPUs trained about 25 % faster). On a queue's engine
 * thread ({@link CallQueue#onEngineThread()}: a call started during backward, its starter
 * computing) it sleeps from the start: spinning or yielding there takes the CPU the computation
 * needs (with as many ranks as CPUs, backward ran nearly twice as long beside a 64 MiB bucket's
 * allreduce).
 *
 * <p>Past the spin phase it checks, every {@link #CHECK_NS} (a sleep lasts at most
 * {@link #SLEEP_NS}), the deadline, whether the group was closed, whether a peer aborted and
 * whether the missing peers' processes are alive, so a wait never outlives a dead peer or the
 * operation's timeout; and once an operation has waited the stall time, it prints one report
 * naming the ranks it waits for (see {@link #reportStall}).
 */
final class SpinBarrier {

    private static final System.Logger LOG = System.getLogger(SpinBarrier.class.getName());

    static final long SPIN_NS = 50_000;
    static final long YIELD_NS = 200_000;
    /** A yield that took longer than this gave the CPU to another thread: the CPU is contended. */
    static final long CONTENDED_NS = 5_000;
    /** How long after a contended yield waits skip spinning (each starts with a yield that looks again). */
    static final long CONTENDED_FOR_NS = 100_000_000;

    static final long PARK_NS = 20_000;
    static final long PARK_MAX_NS = 1_000_000;
    /** The longest park of a wait past {@link #YIELD_NS} on an uncontended CPU: how late such a wait may end. */
    static final long PARK_LONG_WAIT_NS = 250_000;

    static final long CHECK_NS = 2_000_000;
    /** The longest futex sleep: a sleeper that nobody wakes still checks its peers this often. */
    static final long SLEEP_NS = 50_000_000;

    /** What the waiting rank was doing, for messages: "shm rank 0 of 2: allreduce #3 (...)". */
    interface Context {
        String describe();

        boolean closed();

        /** The operation's sequence number in the group. */
        long sequence();

        /** The tag this rank published for it (see {@link ShmProcessGroup}). */
        long tag();

        /** The call. */
        Collective collective();

        /** What the flight records say of where the ranks stand, appended to the stall report ("" for nothing). */
        default String whereTheRanksStand() {
            return "";
        }
    }

    private final ShmLayout layout;
    private final RankNames names;
    private final int rank;
    private final long stallNanos;
    private final ProcessHandle[] peers;
    private final long[] pids;
    private final boolean futex = Futex.AVAILABLE;
    private final long sleepNanos;
    /** The futex timeout (a struct timespec), written before each sleep. */
    private final MemorySegment timespec = Arena.ofAuto().allocate(16, 8);

    /** How a rank waits for a peer (past its first spins); parks where there is no futex. */
    private final WaitPolicy.Wait wait;

    private long phase;
    private long stallReportedFor = -1;

    SpinBarrier(ShmLayout layout, int rank, Duration stallTime, RankNames names) {
        this(layout, rank, stallTime, names, SLEEP_NS);
    }

    /** A barrier whose futex sleeps last at most {@code sleepNanos} (tests lengthen them). */
    SpinBarrier(ShmLayout layout, int rank, Duration stallTime, RankNames names, long sleepNanos) {
        this(layout, rank, stallTime, names, sleepNanos, WaitPolicy.Clock.SYSTEM);
    }

    /** A barrier whose deadlines, stall reports and parks are on {@code clock} (tests step it). */
    SpinBarrier(
            ShmLayout layout, int rank, Duration stallTime, RankNames names, long sleepNanos, WaitPolicy.Clock clock) {
        this.sleepNanos = sleepNanos;
        this.wait = new WaitPolicy(SPIN_NS, YIELD_NS, PARK_NS, PARK_LONG_WAIT_NS, stallTime.toNanos(), clock).newWait();
        this.contendedUntil = clock.nanoTime();
        this.layout = layout;
        this.names = names;
        this.rank = rank;
        this.stallNanos = stallTime.toNanos();
        int n = layout.size();
        this.peers = new ProcessHandle[n];
        this.pids = new long[n];
        for (int r = 0; r < n; r++) {
            pids[r] = layout.pid(r);
            peers[r] = ProcessHandle.of(pids[r]).orElse(null);
        }
        this.phase = (long) ShmLayout.LONG.getAcquire(layout.memory(), layout.counterOffset(rank));
    }

    /** Enters the next phase and waits until every rank has entered it. */
    void await(long deadlineNanos, long timeoutNanos, Context context) {
        long p = ++phase;
        MemorySegment m = layout.memory();
        if (futex) {
            // Volatile store, then volatile load: a peer counts itself a sleeper and then reads the
            // counter, so either it sees p and does not sleep or this rank sees it and wakes it.
            ShmLayout.LONG.setVolatile(m, layout.counterOffset(rank), p);
            if ((long) ShmLayout.LONG.getVolatile(m, layout.sleepersOffset(rank)) != 0) {
                Futex.wakeAll(m.address() + layout.counterWordOffset(rank));
            }
        } else {
            ShmLayout.LONG.setRelease(m, layout.counterOffset(rank), p);
        }
        for (int j = 0; j < layout.size(); j++) {
            if (j != rank && (long) ShmLayout.LONG.getAcquire(layout.memory(), layout.counterOffset(j)) < p) {
                waitFor(j, p, deadlineNanos, timeoutNanos, context);
            }
        }
    }

    /** Barriers this rank has entered since the mapping was created (tests count them). */
    long phase() {
        return phase;
    }

    /**
     * Fails when a peer has given up on the group, even though every rank reached the barrier: a
     * peer that timed out after entering it may have left its operand intact, and the operation
     * must not succeed here while it failed there. Called after an operation's first barrier (a
     * one-barrier allreduce has no later barrier that would find the peer gone). The flags are
     * written once, on failure, so reading them costs a cache hit.
     */
    void checkNoneAbandoned(Context context) {
        for (int j = 0; j < layout.size(); j++) {
            if (j != rank && layout.abortFlag(j) != 0) {
                throw abandoned(j, context);
            }
        }
    }

    private CollectiveException abandoned(int j, Context context) {
        return peerFailure(j, context, "peer rank ", ") abandoned the group after a failure of its own (see its log)");
    }

    /** The failure of this call because of peer {@code j}: "{@code what}RANK (pid PID{@code why}". */
    private CollectiveException peerFailure(int j, Context context, String what, String why) {
        return new CollectiveException(
                context.describe() + ": " + what + names.rank(j) + " (pid " + pids[j] + why,
                null,
                rank,
                context.collective(),
                List.of(j));
    }

    /** Ranks that have not reached the current phase (for messages). */
    List<Integer> missing() {
        List<Integer> m = new ArrayList<>();
        for (int j = 0; j < layout.size(); j++) {
            if (j != rank && (long) ShmLayout.LONG.getAcquire(layout.memory(), layout.counterOffset(j)) < phase) {
                m.add(j);
            }
        }
        return m;
    }

    /** Until when waits skip spinning: a yield showed another thread waiting for the CPU (see the class comment). */
    private long contendedUntil;

    private void waitFor(int j, long p, long deadline, long timeoutNanos, Context context) {
        boolean begun = false;
        long nextCheck = 0;
        int spins = 0;
        boolean patient = CallQueue.onEngineThread();
        boolean wary = wait.now() - contendedUntil < 0;
        long off = layout.counterOffset(j);
        while ((long) ShmLayout.LONG.getAcquire(layout.memory(), off) < p) {
            if (!patient && !wary) {
                Thread.onSpinWait();
                if ((++spins & 255) != 0) {
                    continue;
                }
            }
            if (!begun) {
                begun = true;
                wait.begin(deadline, patient ? Phase.PARK : wary ? Phase.YIELD : Phase.SPIN);
                if (patient) {
                    wait.parkFromNow(PARK_MAX_NS);
                }
                nextCheck = wait.now() + SPIN_NS;
            }
            switch (wait.phase()) {
                case SPIN -> {} // spun above
                case YIELD -> {
                    long before = wait.now();
                    Thread.yield();
                    if (wait.now() - before > CONTENDED_NS) {
                        contendedUntil = before + CONTENDED_FOR_NS;
                        wait.parkFromNow(PARK_MAX_NS);
                    }
                }
                case PARK -> {
                    if (futex) {
                        sleep(j, p, wait.sleepNanos(sleepNanos));
                    } else {
                        wait.idle();
                    }
                }
            }
            long now = wait.now();
            if (now - nextCheck >= 0) {
                check(deadline, timeoutNanos, context);
                nextCheck = now + CHECK_NS;
            }
        }
    }

    /** Sleeps on rank j's counter until j wakes it past phase p, or for at most nanos. */
    private void sleep(int j, long p, long nanos) {
        MemorySegment m = layout.memory();
        long sleepers = layout.sleepersOffset(j);
        ShmLayout.LONG.getAndAdd(m, sleepers, 1L);
        try {
            long seen = (long) ShmLayout.LONG.getVolatile(m, layout.counterOffset(j));
            if (seen < p) {
                Futex.await(m.address() + layout.counterWordOffset(j), (int) seen, nanos, timespec);
            }
        } finally {
            ShmLayout.LONG.getAndAdd(m, sleepers, -1L);
        }
    }

    private void check(long deadline, long timeoutNanos, Context context) {
        if (context.closed()) {
            throw new CollectiveException(
                    context.describe() + ": the process group was closed", null, rank, context.collective(), List.of());
        }
        List<Integer> missing = missing();
        for (int j : missing) {
            // The flag and the liveness are read after the counter: a peer that entered the phase
            // in between and then gave up (its own mismatch) or exited was not missing after all.
            // Its counter is read again after them (a peer stores it before either); the wait goes on.
            boolean dead = peers[j] == null || !peers[j].isAlive();
            boolean aborted = layout.abortFlag(j) != 0;
            if ((dead || aborted)
                    && (long) ShmLayout.LONG.getAcquire(layout.memory(), layout.counterOffset(j)) >= phase) {
                continue;
            }
            if (dead) {
                throw peerFailure(j, context, "lost peer rank ", "): its process died while this rank waited for it");
            }
            if (aborted) {
                throw abandoned(j, context);
            }
        }
        long now = wait.now();
        if (now - deadline >= 0) {
            throw new CollectiveTimeoutException(
                    context.describe() + ": timed out after " + Duration.ofNanos(timeoutNanos) + " waiting for rank(s) "
                            + names.ranks(missing),
                    null,
                    rank,
                    context.collective(),
                    missing);
        }
        long issued = deadline - timeoutNanos;
        if (now - issued >= stallNanos && stallReportedFor != context.sequence() && !missing.isEmpty()) {
            stallReportedFor = context.sequence();
            LOG.log(System.Logger.Level.WARNING, reportStall(context, missing, timeoutNanos));
        }
    }

    /**
     * The stall report: who the operation waits for. A missing peer that has not started this
     * operation (stopped, slow, or its program took another path) is told apart from one that
     * started it and stopped inside: a peer that started it has published its tag in the slot of
     * the operation's sequence parity (either way of running it, copying or in place).
     */
    String reportStall(Context context, List<Integer> missing, long timeoutNanos) {
        List<Integer> notReached = new ArrayList<>();
        List<Integer> inside = new ArrayList<>();
        for (int j : missing) {
            long theirs = (long) ShmLayout.LONG.getAcquire(layout.memory(), layout.tagOffset(j, context.sequence()));
            boolean started = theirs == context.tag() || theirs == (context.tag() ^ ShmProcessGroup.IN_PLACE);
            (started ? inside : notReached).add(j);
        }
        StringBuilder s = new StringBuilder(context.describe())
                .append(" has waited ")
                .append(seconds(stallNanos))
                .append("; ");
        if (!notReached.isEmpty()) {
            s.append("rank(s) ")
                    .append(names.ranks(notReached))
                    .append(" have not reached it (stopped, slow or gone?)");
        }
        if (!inside.isEmpty()) {
            s.append(notReached.isEmpty() ? "" : "; ")
                    .append("rank(s) ")
                    .append(names.ranks(inside))
                    .append(" started it but have not reached this step (stopped or slow?)");
        }
        return s.append("; it fails at its timeout (")
                .append(seconds(timeoutNanos))
                .append(")")
                .append(context.whereTheRanksStand())
                .toString();
    }

    /** "2 s", "0.5 s". */
    private static String seconds(long nanos) {
        return nanos % 1_000_000_000L == 0
                ? nanos / 1_000_000_000L + " s"
                : String.format(Locale.ROOT, "%.1f s", nanos / 1e9);
    }
}
