package dev.cohort.mpi;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.CollectiveException;
import dev.cohort.api.collective.CollectiveMismatchException;
import dev.cohort.api.collective.CollectiveTimeoutException;
import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.OpKind;
import dev.cohort.api.collective.Work;
import dev.cohort.runtime.AbstractProcessGroup;
import dev.cohort.runtime.AlltoallCounts;
import dev.cohort.runtime.CallQueue;
import dev.cohort.runtime.Reduction;
import dev.cohort.runtime.SignatureWords;
import dev.cohort.runtime.Subgroup;
import dev.cohort.runtime.WaitPolicy;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A {@link dev.cohort.api.collective.ProcessGroup} over an MPI communicator. Each call:
 * <ol>
 * <li>exchanges its {@link SignatureWords signature} with every peer (point to point, on a
 *     communicator of its own), so ranks that issued different calls fail naming each one's
 *     before any data moves, and a rank that never issues the call is named at the deadline;</li>
 * <li>runs as MPI's blocking collective on the caller's memory (direct buffers in place; heap
 *     arrays through a native staging copy): Open MPI's tuned algorithms, which every rank is then
 *     known to have entered; a watchdog aborts the job if it outlives the deadline (a peer stopped
 *     inside it);</li>
 * <li>finishes an average (MPI sums; the group divides once).</li>
 * </ol>
 * The signatures travel as nonblocking messages, driven with {@code MPI_Testall} to the deadline
 * (spin, then yield, then short sleeps). Calls run one at a time through a {@link CallQueue}. After
 * a failure the group refuses every later call; after a call gave up with messages outstanding,
 * closing the backend aborts the job ({@code MPI_Abort}) instead of finalizing while peers wait.
 */
final class MpiProcessGroup extends AbstractProcessGroup {

    private static final System.Logger LOG = System.getLogger(MpiProcessGroup.class.getName());
    private static final int SIGNATURE_TAG = 1;
    /** How long a waiting call yields between polls after its spin, before it sleeps between them. */
    static final Duration YIELD = Duration.ofMillis(2);
    /** The longest sleep between two polls of a waiting call. */
    static final Duration LONGEST_SLEEP = Duration.ofNanos(50_000);
    /** How often the watchdog looks at the blocking call in progress. */
    private static final long WATCH_NANOS = 100_000_000;

    private final OpenMpi mpi;
    private final String label;
    private final MemorySegment data;
    private final MemorySegment checks;
    private final Settings settings;
    private final CallQueue queue;
    private final Runnable onClose;
    /** Native memory of the calls: signatures, requests, staging copies (grown as needed; calls are serialized). */
    private final Arena arena = Arena.ofShared();

    private final MemorySegment requests;
    private final MemorySegment flag;
    private final MemorySegment mine;
    private final MemorySegment theirs;
    private final MemorySegment counts;
    private final MemorySegment displacements;
    /** Send and recv: the messages' lengths, and their elements ({@link MpiMessage}). */
    private final MemorySegment lengths;

    private final MemorySegment payloads;
    /** All-to-all-v's receive side (the send side uses {@link #counts} and {@link #displacements}). */
    private final MemorySegment receiveCounts;

    private final MemorySegment receiveDisplacements;
    private MemorySegment reducedScratch = MemorySegment.NULL;
    /** Sends and receives MPI may still use (see {@link MpiMessage}). */
    private final java.util.Set<MpiMessage> inFlight = java.util.concurrent.ConcurrentHashMap.newKeySet();

    private MemorySegment staging = MemorySegment.NULL;
    private volatile CollectiveException broken;
    private final Object watch = new Object();
    private String blockedIn;
    private long blockedUntil;
    private volatile boolean watcherStop;
    /** Set when a call gave up with MPI requests outstanding: MPI may still use its memory, and peers may wait in it. */
    private volatile boolean abandoned;

    /** The waiting of this group's calls (see {@link #await}). */
    private final WaitPolicy.Wait wait;

    /**
     * How a group's calls wait: each call's timeout, how they poll MPI ({@link #waits(Duration,
     * Duration)}: spin, yield, sleep, when a wait is reported), and whether calls exchange their
     * signatures first.
     */
    record Settings(Duration timeout, WaitPolicy waits, boolean check, CallQueue.Options queueOptions) {

        /** What {@code options} say, for a host of {@code ranksOnThisHost} ranks. */
        static Settings of(MpiOptions options, int ranksOnThisHost) {
            return new Settings(
                    options.timeout(),
                    MpiProcessGroup.waits(options.spin(ranksOnThisHost), options.stallTime()),
                    options.consistencyCheck(),
                    options.queueOptions());
        }
    }

    /** Polling MPI: spinning for {@code spin}, then yielding for {@link #YIELD}, then sleeping up to {@link #LONGEST_SLEEP}. */
    static WaitPolicy waits(Duration spin, Duration stallTime) {
        return WaitPolicy.of(spin, spin.plus(YIELD), LONGEST_SLEEP, stallTime);
    }

    /**
     * @param data   the communicator the collectives run on
     * @param checks a duplicate of it, for the signatures (and the barrier without them)
     * @param onClose runs after the communicators are freed (or the job aborted)
     */
    MpiProcessGroup(
            OpenMpi mpi,
            String label,
            MemorySegment data,
            MemorySegment checks,
            int rank,
            int size,
            Settings settings,
            Runnable onClose) {
        super(rank, size, settings.timeout());
        this.mpi = mpi;
        this.label = label;
        this.data = data;
        this.checks = checks;
        this.lengths = mpi.dup(data);
        this.payloads = mpi.dup(data);
        this.settings = settings;
        this.onClose = onClose;
        this.wait = settings.waits().newWait();
        this.requests = arena.allocate(ADDRESS, 2L * size + 1);
        this.flag = arena.allocate(JAVA_INT);
        this.mine = arena.allocate(JAVA_LONG, SignatureWords.WORDS);
        this.theirs = arena.allocate(JAVA_LONG, (long) SignatureWords.WORDS * size);
        this.counts = arena.allocate(JAVA_INT, size);
        this.displacements = arena.allocate(JAVA_INT, size);
        this.receiveCounts = arena.allocate(JAVA_INT, size);
        this.receiveDisplacements = arena.allocate(JAVA_INT, size);
        this.queue = new CallQueue(
                "cohort-mpi-" + label.replace(' ', '-') + "-rank-" + rank,
                c -> "waiting for its peers",
                e -> {},
                settings.queueOptions());
        dev.cohort.runtime.Daemons.thread(
                        "cohort-mpi-watchdog-" + label.replace(' ', '-') + "-rank-" + rank, this::watch)
                .start();
    }

    /** A subgroup: {@code MPI_Comm_split} of this group's communicator (every rank of it takes part), between calls. */
    @Override
    protected AbstractProcessGroup connectSubgroup(Subgroup spec) {
        MemorySegment comm = queue.whileIdle(() -> mpi.split(data, spec.color(), spec.rank()))
                .orElseThrow();
        // A subgroup's calls are the user's: it has an engine thread whatever this group has.
        Settings own = new Settings(settings.timeout(), settings.waits(), settings.check(), new CallQueue.Options());
        return new MpiProcessGroup(
                mpi, label + " " + spec.label(), comm, mpi.dup(comm), spec.rank(), spec.size(), own, () -> {});
    }

    /** Sends and receives: MPI's own nonblocking messages ({@link MpiMessage}). */
    @Override
    protected Work pointToPoint(Collective call, Duration timeout) {
        refuseAfterFailure(call, "an earlier collective failed");
        return new MpiMessage(mpi, label + " " + who(), lengths, payloads, call, timeout, inFlight, settings.waits());
    }

    @Override
    protected void skipSubgroup() {
        queue.whileIdle(() -> mpi.split(data, OpenMpi.UNDEFINED, 0));
    }

    @Override
    protected Work start(Collective call, Duration timeout) {
        refuseAfterFailure(call, "an earlier collective failed and MPI cannot cancel it");
        return queue.submit(who(), call, timeout, this::run);
    }

    /** Refuses {@code call} once a collective failed ({@code why}): the job must restart. */
    private void refuseAfterFailure(Collective call, String why) {
        CollectiveException earlier = broken;
        if (earlier != null) {
            throw new CollectiveException(label + " " + who() + ": " + call.describe() + " refused: " + why
                    + " (restart the job):\n" + earlier.getMessage());
        }
    }

    /** On the queue: the signatures, then the collective, to the end. */
    private void run(CallQueue.Call running) {
        Collective call = running.collective();
        String what = label + " " + who() + ": " + call.describe();
        try {
            if (settings.check()) {
                agree(call, running.deadline(), what);
            } else if (call.kind() == OpKind.BARRIER) {
                meet(call, running.deadline(), what);
            }
            carry(call, running.deadline(), what);
        } catch (CollectiveException e) {
            broken = e;
            throw e;
        } catch (RuntimeException e) {
            CollectiveException failure =
                    new CollectiveException(what + " failed: " + e.getMessage(), e, rank(), call, List.of());
            broken = failure;
            throw failure;
        }
    }

    /** Sends this call's signature to every peer and checks theirs; names the ranks missing at the deadline. */
    private void agree(Collective call, long deadline, String what) {
        if (size() == 1) {
            return;
        }
        long[] words = new long[SignatureWords.WORDS];
        SignatureWords.encode(call, words, 0);
        MemorySegment.copy(words, 0, mine, JAVA_LONG, 0, words.length);
        int n = 0;
        int[] from = new int[size() - 1];
        for (int peer = 0; peer < size(); peer++) {
            if (peer == rank()) {
                continue;
            }
            MemorySegment slot = theirs.asSlice(
                    (long) peer * SignatureWords.WORDS * Long.BYTES, (long) SignatureWords.WORDS * Long.BYTES);
            from[n] = peer;
            mpi.check(
                    mpi.irecvWords(slot, SignatureWords.WORDS, peer, SIGNATURE_TAG, checks, request(n++)), "MPI_Irecv");
        }
        int receives = n;
        for (int peer = 0; peer < size(); peer++) {
            if (peer != rank()) {
                mpi.check(
                        mpi.isendWords(mine, SignatureWords.WORDS, peer, SIGNATURE_TAG, checks, request(n++)),
                        "MPI_Isend");
            }
        }
        if (!await(n, deadline, what, "the other ranks' signatures")) {
            abandoned = true;
            List<Integer> missing = new ArrayList<>();
            for (int i = 0; i < receives; i++) {
                if (requests.getAtIndex(ADDRESS, i).address() != mpi.requestNull.address()) {
                    missing.add(from[i]);
                }
            }
            throw new CollectiveTimeoutException(
                    what + " timed out after " + timeout().toSeconds() + " s: rank(s) " + missing
                            + " never issued it (stopped, or running another collective?)",
                    null,
                    rank(),
                    call,
                    missing);
        }
        long[] all = new long[SignatureWords.WORDS * size()];
        MemorySegment.copy(theirs, JAVA_LONG, 0, all, 0, all.length);
        System.arraycopy(words, 0, all, rank() * SignatureWords.WORDS, SignatureWords.WORDS);
        String disagreement = SignatureWords.disagreement(what, all, size());
        if (disagreement != null) {
            throw new CollectiveMismatchException(disagreement, null, rank(), call, List.of());
        }
    }

    /** A barrier without signatures: MPI's, polled to the deadline (which cannot say who is missing). */
    private void meet(Collective call, long deadline, String what) {
        mpi.check(mpi.ibarrier(checks, request(0)), "MPI_Ibarrier");
        if (!await(1, deadline, what, "the other ranks")) {
            abandoned = true;
            throw new CollectiveTimeoutException(
                    what + " timed out after " + timeout().toSeconds() + " s: some rank "
                            + "never entered it (with --no-mpi-consistency-check the ranks that did not are not known)",
                    null,
                    rank(),
                    call,
                    List.of());
        }
    }

    /**
     * The collective itself, on the caller's memory or a staging copy: MPI's blocking call (its
     * tuned algorithms), which every rank is known to have entered (their signatures arrived), so
     * it returns unless a peer dies (then mpirun ends the job) or stops (then the watchdog aborts
     * the job at the deadline). A barrier is the signature exchange itself.
     */
    /** A collective whose output every rank receives: MPI's call from {@code send} into {@code receive}. */
    private void intoEveryRank(Collective call, MemorySegment send, MemorySegment receive) {
        DenseBuffer input = call.input();
        DenseBuffer output = call.output();
        switch (call.kind()) {
            case ALLGATHER ->
                mpi.check(mpi.allgather(send, input.count(), input.dataType(), receive, data), "MPI_Allgather");
            case ALLGATHERV -> {
                layout(counts, displacements, call.counts(), 0);
                mpi.check(
                        mpi.allgatherv(send, input.count(), input.dataType(), receive, counts, displacements, data),
                        "MPI_Allgatherv");
            }
            case REDUCE_SCATTER ->
                mpi.check(
                        mpi.reduceScatterBlock(send, receive, output.count(), output.dataType(), call.op(), data),
                        "MPI_Reduce_scatter_block");
            default -> throw new IllegalArgumentException(call.kind() + " is not a collective into every rank");
        }
    }

    private void carry(Collective call, long deadline, String what) {
        reserve(call);
        blocked(what, deadline);
        try {
            switch (call.kind()) {
                case ALLREDUCE -> {
                    DenseBuffer buffer = call.input();
                    MemorySegment memory = in(buffer, 0);
                    mpi.check(
                            mpi.allreduce(OpenMpi.IN_PLACE, memory, buffer.count(), buffer.dataType(), call.op(), data),
                            "MPI_Allreduce");
                    out(memory, buffer);
                    Reduction.finish(call.op(), buffer, size());
                }
                case BROADCAST -> {
                    DenseBuffer buffer = call.input();
                    MemorySegment memory = in(buffer, 0);
                    mpi.check(mpi.bcast(memory, buffer.count(), buffer.dataType(), call.root(), data), "MPI_Bcast");
                    if (rank() != call.root()) {
                        out(memory, buffer);
                    }
                }
                case ALLGATHER, ALLGATHERV, REDUCE_SCATTER -> {
                    DenseBuffer input = call.input();
                    DenseBuffer output = call.output();
                    MemorySegment receive = in(output, 0, false);
                    MemorySegment send = in(input, output.byteSize());
                    intoEveryRank(call, send, receive);
                    out(receive, output);
                    if (call.kind() == OpKind.REDUCE_SCATTER) {
                        Reduction.finish(call.op(), output, size());
                    }
                }
                case BARRIER -> {
                    // Every rank's signature arrived: every rank entered the barrier.
                }
                case REDUCE -> {
                    DenseBuffer buffer = call.input();
                    boolean root = rank() == call.root();
                    MemorySegment memory = in(buffer, 0);
                    // Not in place: Open MPI's reduce in place at the root measured 30x slower at 16 MiB after larger
                    // allreduces.
                    MemorySegment result = root ? reduced(buffer.byteSize()) : MemorySegment.NULL;
                    mpi.check(
                            mpi.reduce(memory, result, buffer.count(), buffer.dataType(), call.op(), call.root(), data),
                            "MPI_Reduce");
                    if (root) {
                        MemorySegment.copy(result, 0, MemorySegment.ofBuffer(buffer.view()), 0, buffer.byteSize());
                        Reduction.finish(call.op(), buffer, size());
                    }
                }
                case GATHER, GATHERV -> {
                    DenseBuffer input = call.input();
                    DenseBuffer output = call.output();
                    MemorySegment receive = output == null ? MemorySegment.NULL : in(output, 0, false);
                    MemorySegment send = in(input, output == null ? 0 : output.byteSize());
                    layout(counts, displacements, call.counts(), input.count());
                    mpi.check(
                            mpi.gatherv(
                                    send,
                                    input.count(),
                                    input.dataType(),
                                    receive,
                                    counts,
                                    displacements,
                                    call.root(),
                                    data),
                            "MPI_Gatherv");
                    if (output != null) {
                        out(receive, output);
                    }
                }
                case SCATTER, SCATTERV -> {
                    DenseBuffer input = call.input();
                    DenseBuffer output = call.output();
                    MemorySegment receive = in(output, 0, false);
                    MemorySegment send = input == null ? MemorySegment.NULL : in(input, output.byteSize());
                    layout(counts, displacements, call.counts(), output.count());
                    mpi.check(
                            mpi.scatterv(
                                    send,
                                    counts,
                                    displacements,
                                    output.dataType(),
                                    receive,
                                    output.count(),
                                    call.root(),
                                    data),
                            "MPI_Scatterv");
                    out(receive, output);
                }
                case ALLTOALL, ALLTOALLV -> {
                    DenseBuffer input = call.input();
                    DenseBuffer output = call.output();
                    if (call.kind() == OpKind.ALLTOALLV) {
                        checkPairs(call, deadline, what);
                    }
                    MemorySegment receive = in(output, 0, false);
                    MemorySegment send = in(input, output.byteSize());
                    int block = input.count() / size();
                    layout(counts, displacements, call.counts(), block);
                    layout(receiveCounts, receiveDisplacements, call.receiveCounts(), block);
                    mpi.check(
                            mpi.alltoallv(
                                    send,
                                    counts,
                                    displacements,
                                    input.dataType(),
                                    receive,
                                    receiveCounts,
                                    receiveDisplacements,
                                    data),
                            "MPI_Alltoallv");
                    out(receive, output);
                }
            }
        } finally {
            blocked(null, 0);
        }
    }

    /** Per-rank {@code counts} ({@code null}: {@code uniform} each) and where each starts, into MPI's int arrays. */
    private void layout(MemorySegment countsOut, MemorySegment displacementsOut, int[] counts, int uniform) {
        int offset = 0;
        for (int r = 0; r < size(); r++) {
            int c = counts == null ? uniform : counts[r];
            countsOut.setAtIndex(JAVA_INT, r, c);
            displacementsOut.setAtIndex(JAVA_INT, r, offset);
            offset += c;
        }
    }

    /**
     * All-to-all-v's per-pair counts, gathered from every rank so that every rank finds the same
     * disagreement before any data moves (MPI would truncate, or leave part of an output unwritten).
     */
    private void checkPairs(Collective call, long deadline, String what) {
        int[] packed = AlltoallCounts.packed(call.counts(), call.receiveCounts());
        int[] all = new int[packed.length * size()];
        try (Arena a = Arena.ofConfined()) {
            MemorySegment mineCounts = a.allocateFrom(JAVA_INT, packed);
            MemorySegment allCounts = a.allocate(JAVA_INT, all.length);
            mpi.check(mpi.allgather(mineCounts, packed.length, DataType.INT32, allCounts, data), "MPI_Allgather");
            MemorySegment.copy(allCounts, JAVA_INT, 0, all, 0, all.length);
        }
        String disagreement = AlltoallCounts.disagreement(what, all, size());
        if (disagreement != null) {
            throw new CollectiveMismatchException(disagreement, null, rank(), call, List.of());
        }
    }

    /** What the watchdog watches: the blocking call in progress and its deadline ({@code null}: none). */
    private void blocked(String what, long deadline) {
        synchronized (watch) {
            blockedIn = what;
            blockedUntil = deadline;
        }
    }

    /**
     * Every 100 ms: a blocking call past its deadline means a peer stopped inside it, and MPI
     * cannot cancel it: the job is aborted, saying which call on which rank.
     */
    private void watch() {
        while (!watcherStop) {
            String what;
            synchronized (watch) {
                what = blockedIn != null && settings.waits().clock().nanoTime() - blockedUntil >= 0 ? blockedIn : null;
            }
            if (what != null) {
                abandoned = true;
                LOG.log(
                        System.Logger.Level.ERROR,
                        what + " did not complete within its timeout ("
                                + timeout().toSeconds()
                                + " s) although every rank issued it (a peer stopped, or its host is unreachable); MPI cannot "
                                + "cancel it: aborting the MPI job");
                mpi.abort(data, 1);
                return;
            }
            settings.waits().clock().park(WATCH_NANOS);
        }
    }

    /**
     * Drives MPI until the first {@code count} requests complete, or {@code deadline}: MPI moves
     * messages only while it is called, so this polls as the group's {@link WaitPolicy} says (a
     * rank that waits long waits for a peer's computation, not for bytes); reports a wait longer
     * than the stall time once.
     */
    private boolean await(int count, long deadline, String what, String waitingFor) {
        wait.begin(deadline);
        while (!mpi.testAll(count, requests, flag)) {
            if (wait.expired()) {
                return false;
            }
            if (wait.stalled()) {
                LOG.log(
                        System.Logger.Level.WARNING,
                        what + " has waited "
                                + Duration.ofNanos(wait.policy().stallNanos()).toSeconds() + " s for " + waitingFor
                                + "; it fails at its timeout (" + timeout().toSeconds() + " s)" + whereTheRanksStand());
            }
            wait.idle();
        }
        return true;
    }

    private MemorySegment request(int i) {
        return requests.asSlice(i * ADDRESS.byteSize(), ADDRESS.byteSize());
    }

    /** {@code buffer}'s memory: itself where it is direct, else a staging copy at {@code offset} holding its contents. */
    private MemorySegment in(DenseBuffer buffer, long offset) {
        return in(buffer, offset, true);
    }

    private MemorySegment in(DenseBuffer buffer, long offset, boolean copyIn) {
        if (buffer.isDirect()) {
            return MemorySegment.ofBuffer(buffer.view());
        }
        MemorySegment stage = staging.asSlice(offset, buffer.byteSize());
        if (copyIn) {
            MemorySegment.copy(MemorySegment.ofBuffer(buffer.view()), 0, stage, 0, buffer.byteSize());
        }
        return stage;
    }

    /** The result in {@code memory} into {@code buffer}, where {@code memory} was a staging copy. */
    private static void out(MemorySegment memory, DenseBuffer buffer) {
        if (!buffer.isDirect()) {
            MemorySegment.copy(memory, 0, MemorySegment.ofBuffer(buffer.view()), 0, buffer.byteSize());
        }
    }

    /** {@code bytes} of native memory for a reduce's result at the root, grown as needed and kept. */
    private MemorySegment reduced(long bytes) {
        long need = Math.max(64, bytes);
        if (reducedScratch.byteSize() < need) {
            reducedScratch = arena.allocate(Math.max(need, 2 * reducedScratch.byteSize()), 64);
        }
        return reducedScratch.asSlice(0, need);
    }

    /** Staging memory for the call's heap buffers: the output (if any), then the input. */
    private void reserve(Collective call) {
        long bytes = (call.input() == null ? 0 : call.input().byteSize())
                + (call.output() == null ? 0 : call.output().byteSize());
        if (staging.byteSize() < bytes) {
            // Freed with the group: the arena is the group's, staging only grows.
            staging = arena.allocate(Math.max(bytes, 2 * staging.byteSize()), 64);
        }
    }

    @Override
    protected void release() {
        watcherStop = true;
        queue.close(() -> {
            boolean failed = abandoned;
            try {
                if (!failed) {
                    mpi.free(lengths);
                    mpi.free(payloads);
                    mpi.free(checks);
                    if (!data.equals(checks)) {
                        mpi.free(data);
                    }
                }
            } finally {
                if (!failed) {
                    arena.close(); // after a failure MPI may still write into it: it goes with the process
                }
                onClose.run();
            }
        });
    }

    /** Whether a call gave up with MPI requests outstanding (then closing the job must abort it). */
    boolean failed() {
        return abandoned;
    }
}
