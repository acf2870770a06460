package dev.cohort.runtime;

import dev.cohort.api.Timeouts;
import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.OpKind;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.api.collective.Work;
import dev.cohort.runtime.flight.FlightRecorder;
import dev.cohort.runtime.p2p.PostOffice;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Validates every call, numbers it, and hands it to the engine through {@link #start}. Engines
 * extend this, so all engines reject bad input with the same messages.
 */
public abstract class AbstractProcessGroup extends TimedCalls {

    private final int rank;
    /** "rank 3 of 4", built once. */
    private final String rankOfSize;

    private final int size;
    private final Duration timeout;
    /** Validates and numbers this rank's calls. */
    private final CallChecks calls;

    private final AtomicLong subgroups = new AtomicLong();
    /** Each rank's global rank, for a subgroup; null where they are the ranks here. */
    private volatile int[] globalRanks;

    private volatile SubgroupMaker subgroupMaker;
    private volatile java.util.function.Supplier<PostOffice> postOfficeFactory;
    private PostOffice postOffice;
    private volatile String subgroupScope;
    private volatile boolean closed;
    /** Where this rank's calls are on record; null: nowhere. */
    private volatile FlightRecorder recorder;
    /** The number this group's calls are recorded under: 0 for the world ({@link FlightRecorder#group}). */
    private volatile int recordedGroup;

    private volatile String recordedName = FlightRecorder.WORLD;
    /** The group whose flight records this one's stall reports read, where not its own. */
    private volatile AbstractProcessGroup reportsFlightOf;

    protected AbstractProcessGroup(int rank, int size, Duration timeout) {
        if (size < 1) {
            throw new IllegalArgumentException("group size must be >= 1, got " + size);
        }
        if (rank < 0 || rank >= size) {
            throw new IllegalArgumentException("rank must be in [0, " + size + "), got " + rank);
        }
        this.rank = rank;
        this.size = size;
        this.rankOfSize = "rank " + rank + " of " + size;
        this.calls = new CallChecks(rank, size);
        this.timeout = checkTimeout(timeout);
    }

    /** Runs {@code call} (already validated and numbered) with {@code timeout}. */
    protected abstract Work start(Collective call, Duration timeout);

    /** Releases engine resources; called once by {@link #close()}. */
    protected abstract void release();

    @Override
    public final int rank() {
        return rank;
    }

    @Override
    public final int size() {
        return size;
    }

    @Override
    public final Duration timeout() {
        return timeout;
    }

    @Override
    public ProcessGroup withTimeout(Duration timeout) {
        return new TimeoutView(this, checkTimeout(timeout));
    }

    public boolean isClosed() {
        return closed;
    }

    /** This group: it runs the calls it is given with its own timeout. */
    @Override
    final AbstractProcessGroup engine() {
        return this;
    }

    @Override
    public final synchronized void close() {
        if (!closed) {
            closed = true;
            if (postOffice != null) {
                postOffice.close();
            }
            release();
        }
    }

    final Work startAllreduce(DenseBuffer data, ReduceOp op, Duration timeout) {
        checkOpen("allreduce");
        return issue(calls.allreduce(data, op), timeout, CORE);
    }

    final Work startBroadcast(DenseBuffer data, int root, Duration timeout) {
        checkOpen("broadcast");
        return issue(calls.broadcast(data, root), timeout, CORE);
    }

    final Work startAllgather(DenseBuffer input, DenseBuffer output, Duration timeout) {
        checkOpen("allgather");
        return issue(calls.allgather(input, output), timeout, CORE);
    }

    final Work startAllgatherv(DenseBuffer input, DenseBuffer output, int[] counts, Duration timeout) {
        checkOpen("allgatherv");
        return issue(calls.allgatherv(input, output, counts), timeout, CORE);
    }

    final Work startReduceScatter(DenseBuffer input, DenseBuffer output, ReduceOp op, Duration timeout) {
        checkOpen("reduce-scatter");
        return issue(calls.reduceScatter(input, output, op), timeout, CORE);
    }

    final Work startBarrier(Duration timeout) {
        checkOpen("barrier");
        return issue(calls.barrier(), timeout, CORE);
    }

    final Work startPointToPoint(OpKind kind, DenseBuffer data, int peer, int tag, Duration timeout) {
        checkOpen(kind.label());
        return issue(calls.pointToPoint(kind, data, peer, tag), timeout, MESSAGE);
    }

    final Work startReduce(DenseBuffer data, ReduceOp op, int root, Duration timeout) {
        checkOpen("reduce");
        return issue(calls.reduce(data, op, root), timeout, BEGIN);
    }

    /** gather ({@code counts == null}) and gatherv. */
    final Work startGather(DenseBuffer input, DenseBuffer output, int[] counts, int root, Duration timeout) {
        checkOpen(counts == null ? "gather" : "gatherv");
        return issue(calls.gather(input, output, counts, root), timeout, BEGIN);
    }

    /** scatter ({@code counts == null}) and scatterv. */
    final Work startScatter(DenseBuffer input, DenseBuffer output, int[] counts, int root, Duration timeout) {
        checkOpen(counts == null ? "scatter" : "scatterv");
        return issue(calls.scatter(input, output, counts, root), timeout, BEGIN);
    }

    /** alltoall ({@code sendCounts == null}) and alltoallv. */
    final Work startAlltoall(
            DenseBuffer input, int[] sendCounts, DenseBuffer output, int[] receiveCounts, Duration timeout) {
        checkOpen(sendCounts == null ? "alltoall" : "alltoallv");
        return issue(calls.alltoall(input, sendCounts, output, receiveCounts), timeout, BEGIN);
    }

    /**
     * Runs a send or recv ({@code call.root()} is the peer, {@code call.tag()} the tag): through
     * the {@link PostOffice} the engine registered ({@link #messagesThrough}), made at the first
     * message. Engines with a way of their own override it.
     */
    protected Work pointToPoint(Collective call, Duration timeout) {
        java.util.function.Supplier<PostOffice> factory = postOfficeFactory;
        if (factory == null) {
            throw new UnsupportedOperationException(
                    call.kind().label() + " on " + who() + ": this engine carries no " + "messages between two ranks");
        }
        PostOffice office;
        synchronized (this) {
            if (postOffice == null) {
                postOffice = factory.get();
            }
            office = postOffice;
        }
        return office.post(call, timeout);
    }

    /** Sends and receives go through {@code office}, made already (it closes with this group). */
    public final synchronized void messagesThrough(PostOffice office) {
        Objects.requireNonNull(office, "office");
        this.postOffice = office;
        this.postOfficeFactory = () -> office;
    }

    /** Sends and receives go through a {@link PostOffice} from {@code factory}, made at the first one. */
    public final void messagesThrough(java.util.function.Supplier<PostOffice> factory) {
        this.postOfficeFactory = Objects.requireNonNull(factory, "factory");
    }

    /**
     * Whether this engine runs {@code kind} itself; kinds it does not run are composed from the
     * ones it does by {@link ComposedCollectives}. True for every kind unless an engine says otherwise.
     */
    protected boolean runsNatively(OpKind kind) {
        return true;
    }

    private static final int CORE = 0;
    private static final int BEGIN = 1;
    private static final int MESSAGE = 2;

    /**
     * Puts {@code call} on record (before the engine starts it: a call that never returns is on
     * record too), then starts it: a core collective ({@link #start}), one the engine may compose
     * ({@link #begin}) or a message ({@link #pointToPoint}).
     */
    private Work issue(Collective call, Duration timeout, int path) {
        FlightRecorder r = recorder;
        long ticket = r == null ? -1 : r.issued(call, recordedGroup);
        Work work;
        try {
            work = switch (path) {
                case CORE -> start(call, timeout);
                case MESSAGE -> pointToPoint(call, timeout);
                default -> begin(call, timeout);
            };
        } catch (RuntimeException | Error e) {
            if (r != null) {
                r.settled(ticket, true);
            }
            throw e;
        }
        if (r != null) {
            if (work instanceof FlightTracked tracked) {
                tracked.recordedAs(r, ticket);
            } else if (work.isDone()) {
                r.settled(ticket, work.failure().isPresent());
            }
        }
        return work;
    }

    /**
     * Puts this group's calls on record in {@code recorder} from now on: the job's world group,
     * whose ranks are the job's ({@link FlightRecorder#forJob}).
     */
    public final void recordsFlight(FlightRecorder recorder) {
        this.recorder = Objects.requireNonNull(recorder, "recorder");
        this.recordedGroup = 0;
    }

    /**
     * "; flight records: rank 1 completed allreduce #41 ... and issued nothing since ...": where
     * the ranks stand from the rings in this rank's flight-record folder (those of its host, or
     * of every host on a shared file system), for an engine's stall report; empty without one.
     */
    protected final String whereTheRanksStand() {
        AbstractProcessGroup outer = reportsFlightOf;
        FlightRecorder r = outer != null ? outer.recorder : recorder;
        java.nio.file.Path file = r == null ? null : r.file().orElse(null);
        if (file == null) {
            return "";
        }
        try {
            var report = dev.cohort.runtime.flight.FlightReport.of(
                    file.toAbsolutePath().getParent());
            return report.isEmpty() ? "" : "; flight records: " + report.summary();
        } catch (java.io.IOException | RuntimeException e) {
            return "; the flight records cannot be read: " + e.getMessage();
        }
    }

    /**
     * This group's stall reports tell where the ranks stand from {@code outer}'s flight records: for
     * a group inside another engine (hier's within and between hosts), whose own calls are not on
     * record.
     */
    public final void reportsFlightOf(AbstractProcessGroup outer) {
        this.reportsFlightOf = Objects.requireNonNull(outer, "outer");
    }

    /** Where this group's calls are on record, if anywhere. */
    public final Optional<FlightRecorder> flightRecorder() {
        return Optional.ofNullable(recorder);
    }

    private Work begin(Collective call, Duration timeout) {
        return runsNatively(call.kind()) ? start(call, timeout) : ComposedCollectives.start(this, call, timeout);
    }

    /**
     * Splits this group into disjoint subgroups (MPI's {@code comm_split}): the ranks that pass the
     * same {@code color} form one, ranked by {@code key} (ties by rank here); a negative color
     * leaves this rank out. A collective of this group: every rank calls it, in the same order as
     * its other calls. Each subgroup has its own ranks, sequence numbers and resources; close it
     * before this group.
     *
     * @return the subgroup, or empty for a negative color
     */
    @Override
    public final Optional<ProcessGroup> split(int color, int key) {
        return subgroup(color, key, 0, "split");
    }

    /**
     * The group of {@code ranks} of this group, ranked in that order (torch's {@code new_group}):
     * every rank of this group calls it with the same ranks (checked); empty on the others.
     */
    @Override
    public final Optional<ProcessGroup> newGroup(int... ranks) {
        Objects.requireNonNull(ranks, "newGroup: ranks is null");
        boolean[] seen = new boolean[size];
        int mine = -1;
        for (int i = 0; i < ranks.length; i++) {
            if (ranks[i] < 0 || ranks[i] >= size || seen[ranks[i]]) {
                throw new IllegalArgumentException("newGroup: ranks must be distinct ranks of this group of " + size
                        + ", got " + java.util.Arrays.toString(ranks));
            }
            seen[ranks[i]] = true;
            if (ranks[i] == rank) {
                mine = i;
            }
        }
        if (ranks.length == 0) {
            throw new IllegalArgumentException("newGroup: no ranks given");
        }
        return subgroup(mine >= 0 ? 0 : -1, mine, java.util.Arrays.hashCode(ranks) | 1, "new-group");
    }

    /**
     * Gathers every rank's (color, key, list hash), checks that the lists agree, and has the
     * engine make this rank's subgroup ({@link #connectSubgroup}).
     */
    private Optional<ProcessGroup> subgroup(int color, int key, int listHash, String kind) {
        checkOpen(kind);
        int[] all = new int[3 * size];
        startAllgather(DenseBuffer.of(new int[] {color, key, listHash}), DenseBuffer.of(all), timeout)
                .await();
        long id = subgroups.getAndIncrement();
        for (int r = 0; r < size; r++) {
            if (all[3 * r + 2] != listHash) {
                throw new IllegalArgumentException(kind + " on " + who() + ": rank " + r
                        + " passed other ranks than this " + "rank (every rank must pass the same list)");
            }
        }
        if (color < 0) {
            skipSubgroup();
            return Optional.empty();
        }
        java.util.List<Integer> members = new java.util.ArrayList<>();
        for (int r = 0; r < size; r++) {
            if (all[3 * r] == color) {
                members.add(r);
            }
        }
        members.sort(
                java.util.Comparator.<Integer>comparingInt(r -> all[3 * r + 1]).thenComparingInt(r -> r));
        int[] parentRanks = members.stream().mapToInt(Integer::intValue).toArray();
        int[] global = new int[parentRanks.length];
        for (int i = 0; i < global.length; i++) {
            global[i] = globalRank(parentRanks[i]);
        }
        Subgroup spec = new Subgroup(
                kind + "-" + id + "-color-" + color, parentRanks, global, members.indexOf(rank), color, timeout);
        ProcessGroup child = connectSubgroup(spec);
        if (child instanceof AbstractProcessGroup g) {
            g.globalRanks = global;
            FlightRecorder r = recorder;
            if (r != null) {
                // Its calls go on this rank's record too, under a name the same on its every rank.
                g.recordedName = recordedName + "/" + spec.name();
                g.recordedGroup = r.group(g.recordedName);
                g.recorder = r;
            }
        }
        return Optional.of(child);
    }

    /**
     * Makes this rank's group of {@code spec}'s members. Every member calls it at the same point;
     * the parent's group is not otherwise used.
     */
    protected ProcessGroup connectSubgroup(Subgroup spec) {
        SubgroupMaker maker = subgroupMaker;
        if (maker == null) {
            throw new UnsupportedOperationException(getClass().getSimpleName() + " makes no subgroups");
        }
        String childScope = subgroupScope + "/" + spec.name();
        AbstractProcessGroup child = maker.make(childScope, spec);
        child.makesSubgroups(maker, childScope);
        return child;
    }

    /** On a rank left out of every subgroup of a split: engines that make subgroups collectively over the whole group take part here. */
    protected void skipSubgroup() {}

    /**
     * This group makes its subgroups with {@code maker}, in resources named under {@code scope}
     * (unique in the job, the same on every rank: "world"); so do their subgroups.
     */
    public final void makesSubgroups(SubgroupMaker maker, String scope) {
        this.subgroupMaker = Objects.requireNonNull(maker, "maker");
        this.subgroupScope = Objects.requireNonNull(scope, "scope");
    }

    /** The global rank (in the job) of rank {@code r} of this group. */
    public final int globalRank(int r) {
        return globalRanks == null ? r : globalRanks[r];
    }

    /** "rank 3 of 4" — the prefix of this group's messages. */
    protected String who() {
        return rankOfSize;
    }

    private void checkOpen(String op) {
        if (closed) {
            throw new IllegalStateException(op + " on " + who() + ": the process group is closed");
        }
    }

    static Duration checkTimeout(Duration timeout) {
        return Timeouts.requirePositive(timeout);
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "[" + who() + "]";
    }
}
