package dev.cohort.runtime;

import dev.cohort.api.Timeouts;
import dev.cohort.api.collective.BufferAllocator;
import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.OpKind;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.api.collective.Work;
import dev.cohort.runtime.p2p.PostOffice;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Validates every call, numbers it, and hands it to the engine through {@link #start}. Engines
 * extend this, so all engines reject bad input with the same messages.
 */
public abstract class AbstractProcessGroup implements ProcessGroup {

    private final int rank;
    /** "rank 3 of 4", built once. */
    private final String rankOfSize;

    private final int size;
    private final Duration timeout;
    private final AtomicLong sequence = new AtomicLong();
    private final AtomicLong subgroups = new AtomicLong();
    /** Each rank's global rank, for a subgroup; null where they are the ranks here. */
    private volatile int[] globalRanks;

    private volatile SubgroupMaker subgroupMaker;
    private final AtomicLong messages = new AtomicLong();
    private volatile java.util.function.Supplier<PostOffice> postOfficeFactory;
    private PostOffice postOffice;
    private volatile String subgroupScope;
    private volatile boolean closed;

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

    @Override
    public final Work allreduce(DenseBuffer data, ReduceOp op) {
        return startAllreduce(data, op, timeout);
    }

    @Override
    public final Work broadcast(DenseBuffer data, int root) {
        return startBroadcast(data, root, timeout);
    }

    @Override
    public final Work allgather(DenseBuffer input, DenseBuffer output) {
        return startAllgather(input, output, timeout);
    }

    @Override
    public final Work allgatherv(DenseBuffer input, DenseBuffer output, int[] counts) {
        return startAllgatherv(input, output, counts, timeout);
    }

    @Override
    public final Work reduceScatter(DenseBuffer input, DenseBuffer output, ReduceOp op) {
        return startReduceScatter(input, output, op, timeout);
    }

    @Override
    public final Work barrier() {
        return startBarrier(timeout);
    }

    @Override
    public final Work send(DenseBuffer data, int peer, int tag) {
        return startPointToPoint(OpKind.SEND, data, peer, tag, timeout);
    }

    @Override
    public final Work recv(DenseBuffer data, int peer, int tag) {
        return startPointToPoint(OpKind.RECV, data, peer, tag, timeout);
    }

    @Override
    public final Work reduce(DenseBuffer data, ReduceOp op, int root) {
        return startReduce(data, op, root, timeout);
    }

    @Override
    public final Work gather(DenseBuffer input, DenseBuffer output, int root) {
        return startGather(input, output, null, root, timeout);
    }

    @Override
    public final Work gatherv(DenseBuffer input, DenseBuffer output, int[] counts, int root) {
        return startGather(input, output, Objects.requireNonNull(counts, "gatherv: counts is null"), root, timeout);
    }

    @Override
    public final Work scatter(DenseBuffer input, DenseBuffer output, int root) {
        return startScatter(input, output, null, root, timeout);
    }

    @Override
    public final Work scatterv(DenseBuffer input, DenseBuffer output, int[] counts, int root) {
        return startScatter(input, output, Objects.requireNonNull(counts, "scatterv: counts is null"), root, timeout);
    }

    @Override
    public final Work alltoall(DenseBuffer input, DenseBuffer output) {
        return startAlltoall(input, null, output, null, timeout);
    }

    @Override
    public final Work alltoallv(DenseBuffer input, int[] sendCounts, DenseBuffer output, int[] receiveCounts) {
        return startAlltoall(
                input,
                Objects.requireNonNull(sendCounts, "alltoallv: sendCounts is null"),
                output,
                Objects.requireNonNull(receiveCounts, "alltoallv: receiveCounts is null"),
                timeout);
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
        checkWritable("allreduce", "data", data);
        Objects.requireNonNull(op, "allreduce: reduce op is null");
        return start(new Collective(OpKind.ALLREDUCE, sequence.getAndIncrement(), data, null, op, -1, null), timeout);
    }

    final Work startBroadcast(DenseBuffer data, int root, Duration timeout) {
        checkOpen("broadcast");
        Objects.requireNonNull(data, "broadcast: data buffer is null");
        if (root < 0 || root >= size) {
            throw new IllegalArgumentException("broadcast: root must be in [0, " + size + "), got " + root);
        }
        if (rank != root) {
            checkWritable("broadcast", "data", data);
        }
        return start(
                new Collective(OpKind.BROADCAST, sequence.getAndIncrement(), data, null, null, root, null), timeout);
    }

    final Work startAllgather(DenseBuffer input, DenseBuffer output, Duration timeout) {
        checkOpen("allgather");
        Objects.requireNonNull(input, "allgather: input buffer is null");
        checkWritable("allgather", "output", output);
        checkSameType("allgather", input, output);
        if ((long) input.count() * size != output.count()) {
            throw new IllegalArgumentException("allgather: output must hold world size x input = " + size + " x "
                    + input.count() + " = " + (long) input.count() * size + " elements, got " + output.count());
        }
        return start(
                new Collective(OpKind.ALLGATHER, sequence.getAndIncrement(), input, output, null, -1, null), timeout);
    }

    final Work startAllgatherv(DenseBuffer input, DenseBuffer output, int[] counts, Duration timeout) {
        checkOpen("allgatherv");
        Objects.requireNonNull(input, "allgatherv: input buffer is null");
        checkWritable("allgatherv", "output", output);
        checkSameType("allgatherv", input, output);
        Objects.requireNonNull(counts, "allgatherv: counts is null");
        if (counts.length != size) {
            throw new IllegalArgumentException(
                    "allgatherv: counts must have one entry per rank (" + size + "), got " + counts.length);
        }
        long total = 0;
        for (int r = 0; r < size; r++) {
            if (counts[r] < 0) {
                throw new IllegalArgumentException("allgatherv: counts[" + r + "] is negative: " + counts[r]);
            }
            total += counts[r];
        }
        if (counts[rank] != input.count()) {
            throw new IllegalArgumentException("allgatherv: counts[" + rank + "] (this rank) is " + counts[rank]
                    + " but the input holds " + input.count() + " elements");
        }
        if (total != output.count()) {
            throw new IllegalArgumentException(
                    "allgatherv: output must hold the sum of counts (" + total + ") elements, got " + output.count());
        }
        return start(
                new Collective(OpKind.ALLGATHERV, sequence.getAndIncrement(), input, output, null, -1, counts.clone()),
                timeout);
    }

    final Work startReduceScatter(DenseBuffer input, DenseBuffer output, ReduceOp op, Duration timeout) {
        checkOpen("reduce-scatter");
        Objects.requireNonNull(input, "reduce-scatter: input buffer is null");
        checkWritable("reduce-scatter", "output", output);
        checkSameType("reduce-scatter", input, output);
        Objects.requireNonNull(op, "reduce-scatter: reduce op is null");
        if ((long) output.count() * size != input.count()) {
            throw new IllegalArgumentException("reduce-scatter: input must hold world size x output = " + size
                    + " x " + output.count() + " = " + (long) output.count() * size + " elements, got "
                    + input.count());
        }
        return start(
                new Collective(OpKind.REDUCE_SCATTER, sequence.getAndIncrement(), input, output, op, -1, null),
                timeout);
    }

    final Work startBarrier(Duration timeout) {
        checkOpen("barrier");
        return start(new Collective(OpKind.BARRIER, sequence.getAndIncrement(), null, null, null, -1, null), timeout);
    }

    final Work startPointToPoint(OpKind kind, DenseBuffer data, int peer, int tag, Duration timeout) {
        String op = kind.label();
        checkOpen(op);
        if (kind == OpKind.RECV) {
            checkWritable(op, "data", data);
        } else {
            Objects.requireNonNull(data, () -> op + ": data buffer is null");
        }
        if (peer < 0 || peer >= size || peer == rank) {
            throw new IllegalArgumentException(op + ": peer must be another rank of this group of " + size
                    + " (this is " + rank + "), got " + peer);
        }
        if (tag < 0) {
            throw new IllegalArgumentException(op + ": tag must be >= 0, got " + tag);
        }
        return pointToPoint(
                new Collective(kind, messages.getAndIncrement(), data, null, null, peer, new int[] {tag}), timeout);
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

    final Work startReduce(DenseBuffer data, ReduceOp op, int root, Duration timeout) {
        checkOpen("reduce");
        checkRoot("reduce", root);
        Objects.requireNonNull(op, "reduce: reduce op is null");
        if (rank == root) {
            checkWritable("reduce", "data", data);
        } else {
            Objects.requireNonNull(data, "reduce: data buffer is null");
        }
        return begin(new Collective(OpKind.REDUCE, sequence.getAndIncrement(), data, null, op, root, null), timeout);
    }

    /** gather ({@code counts == null}) and gatherv. */
    final Work startGather(DenseBuffer input, DenseBuffer output, int[] counts, int root, Duration timeout) {
        String op = counts == null ? "gather" : "gatherv";
        checkOpen(op);
        checkRoot(op, root);
        Objects.requireNonNull(input, () -> op + ": input buffer is null");
        long total = counts == null ? (long) input.count() * size : checkCounts(op, counts, input.count(), "input");
        if (rank == root) {
            checkWritable(op, "output", output);
            checkSameType(op, input, output);
            if (total != output.count()) {
                throw new IllegalArgumentException(op + ": the root's output must hold "
                        + (counts == null
                                ? "world size x input = " + size + " x " + input.count() + " = "
                                : "the sum of counts (")
                        + total + (counts == null ? "" : ")") + " elements, got " + output.count());
            }
        }
        OpKind kind = counts == null ? OpKind.GATHER : OpKind.GATHERV;
        return begin(
                new Collective(
                        kind,
                        sequence.getAndIncrement(),
                        input,
                        rank == root ? output : null,
                        null,
                        root,
                        counts == null ? null : counts.clone()),
                timeout);
    }

    /** scatter ({@code counts == null}) and scatterv. */
    final Work startScatter(DenseBuffer input, DenseBuffer output, int[] counts, int root, Duration timeout) {
        String op = counts == null ? "scatter" : "scatterv";
        checkOpen(op);
        checkRoot(op, root);
        checkWritable(op, "output", output);
        long total = counts == null ? (long) output.count() * size : checkCounts(op, counts, output.count(), "output");
        if (rank == root) {
            Objects.requireNonNull(input, () -> op + ": the root's input buffer is null");
            checkSameType(op, input, output);
            if (total != input.count()) {
                throw new IllegalArgumentException(op + ": the root's input must hold "
                        + (counts == null
                                ? "world size x output = " + size + " x " + output.count() + " = "
                                : "the sum of counts (")
                        + total + (counts == null ? "" : ")") + " elements, got " + input.count());
            }
        }
        OpKind kind = counts == null ? OpKind.SCATTER : OpKind.SCATTERV;
        return begin(
                new Collective(
                        kind,
                        sequence.getAndIncrement(),
                        rank == root ? input : null,
                        output,
                        null,
                        root,
                        counts == null ? null : counts.clone()),
                timeout);
    }

    /** alltoall ({@code sendCounts == null}) and alltoallv. */
    final Work startAlltoall(
            DenseBuffer input, int[] sendCounts, DenseBuffer output, int[] receiveCounts, Duration timeout) {
        String op = sendCounts == null ? "alltoall" : "alltoallv";
        checkOpen(op);
        Objects.requireNonNull(input, () -> op + ": input buffer is null");
        checkWritable(op, "output", output);
        checkSameType(op, input, output);
        if (sendCounts == null) {
            if (input.count() % size != 0 || input.count() != output.count()) {
                throw new IllegalArgumentException(op + ": input and output must both hold world size (" + size
                        + ") blocks of equal length, got " + input.count() + " and " + output.count() + " elements");
            }
            return begin(
                    new Collective(OpKind.ALLTOALL, sequence.getAndIncrement(), input, output, null, -1, null),
                    timeout);
        }
        long sent = sumOf(op, "sendCounts", sendCounts);
        long received = sumOf(op, "receiveCounts", receiveCounts);
        if (sent != input.count()) {
            throw new IllegalArgumentException(
                    op + ": input must hold the sum of sendCounts (" + sent + ") elements, got " + input.count());
        }
        if (received != output.count()) {
            throw new IllegalArgumentException(op + ": output must hold the sum of receiveCounts (" + received
                    + ") elements, got " + output.count());
        }
        return begin(
                new Collective(
                        OpKind.ALLTOALLV,
                        sequence.getAndIncrement(),
                        input,
                        output,
                        null,
                        -1,
                        sendCounts.clone(),
                        receiveCounts.clone()),
                timeout);
    }

    /**
     * Whether this engine runs {@code kind} itself; kinds it does not run are composed from the
     * ones it does by {@link ComposedCollectives}. True for every kind unless an engine says otherwise.
     */
    protected boolean runsNatively(OpKind kind) {
        return true;
    }

    private Work begin(Collective call, Duration timeout) {
        return runsNatively(call.kind()) ? start(call, timeout) : ComposedCollectives.start(this, call, timeout);
    }

    /** Validates per-rank counts (one per rank, none negative, this rank's {@code mine}); returns their sum. */
    private long checkCounts(String op, int[] counts, int mine, String buffer) {
        long total = sumOf(op, "counts", counts);
        if (counts[rank] != mine) {
            throw new IllegalArgumentException(op + ": counts[" + rank + "] (this rank) is " + counts[rank]
                    + " but the " + buffer + " holds " + mine + " elements");
        }
        return total;
    }

    private long sumOf(String op, String name, int[] counts) {
        if (counts.length != size) {
            throw new IllegalArgumentException(
                    op + ": " + name + " must have one entry per rank (" + size + "), got " + counts.length);
        }
        long total = 0;
        for (int r = 0; r < size; r++) {
            if (counts[r] < 0) {
                throw new IllegalArgumentException(op + ": " + name + "[" + r + "] is negative: " + counts[r]);
            }
            total += counts[r];
        }
        return total;
    }

    private void checkRoot(String op, int root) {
        if (root < 0 || root >= size) {
            throw new IllegalArgumentException(op + ": root must be in [0, " + size + "), got " + root);
        }
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

    private static void checkWritable(String op, String name, DenseBuffer buffer) {
        Objects.requireNonNull(buffer, () -> op + ": " + name + " buffer is null");
        if (buffer.isReadOnly()) {
            throw new IllegalArgumentException(
                    op + ": " + name + " buffer " + buffer.describe() + " is read-only but receives the result");
        }
    }

    private static void checkSameType(String op, DenseBuffer input, DenseBuffer output) {
        if (input.dataType() != output.dataType()) {
            throw new IllegalArgumentException(
                    op + ": input is " + input.dataType().label() + " but output is "
                            + output.dataType().label());
        }
    }

    static Duration checkTimeout(Duration timeout) {
        return Timeouts.requirePositive(timeout);
    }

    /** The group seen with another timeout; shares everything else, closing it closes the group. */
    private static final class TimeoutView implements ProcessGroup {
        private final AbstractProcessGroup group;
        private final Duration timeout;

        TimeoutView(AbstractProcessGroup group, Duration timeout) {
            this.group = group;
            this.timeout = timeout;
        }

        @Override
        public int rank() {
            return group.rank();
        }

        @Override
        public int size() {
            return group.size();
        }

        @Override
        public Duration timeout() {
            return timeout;
        }

        @Override
        public ProcessGroup withTimeout(Duration t) {
            return new TimeoutView(group, checkTimeout(t));
        }

        @Override
        public Work allreduce(DenseBuffer d, ReduceOp op) {
            return group.startAllreduce(d, op, timeout);
        }

        @Override
        public Work broadcast(DenseBuffer d, int root) {
            return group.startBroadcast(d, root, timeout);
        }

        @Override
        public Work allgather(DenseBuffer i, DenseBuffer o) {
            return group.startAllgather(i, o, timeout);
        }

        @Override
        public Work allgatherv(DenseBuffer i, DenseBuffer o, int[] c) {
            return group.startAllgatherv(i, o, c, timeout);
        }

        @Override
        public Work reduceScatter(DenseBuffer i, DenseBuffer o, ReduceOp op) {
            return group.startReduceScatter(i, o, op, timeout);
        }

        @Override
        public Work barrier() {
            return group.startBarrier(timeout);
        }

        @Override
        public Work send(DenseBuffer d, int peer, int tag) {
            return group.startPointToPoint(OpKind.SEND, d, peer, tag, timeout);
        }

        @Override
        public Work recv(DenseBuffer d, int peer, int tag) {
            return group.startPointToPoint(OpKind.RECV, d, peer, tag, timeout);
        }

        @Override
        public Work reduce(DenseBuffer d, ReduceOp op, int root) {
            return group.startReduce(d, op, root, timeout);
        }

        @Override
        public Work gather(DenseBuffer i, DenseBuffer o, int root) {
            return group.startGather(i, o, null, root, timeout);
        }

        @Override
        public Work gatherv(DenseBuffer i, DenseBuffer o, int[] c, int root) {
            return group.startGather(i, o, Objects.requireNonNull(c, "gatherv: counts is null"), root, timeout);
        }

        @Override
        public Work scatter(DenseBuffer i, DenseBuffer o, int root) {
            return group.startScatter(i, o, null, root, timeout);
        }

        @Override
        public Work scatterv(DenseBuffer i, DenseBuffer o, int[] c, int root) {
            return group.startScatter(i, o, Objects.requireNonNull(c, "scatterv: counts is null"), root, timeout);
        }

        @Override
        public Work alltoall(DenseBuffer i, DenseBuffer o) {
            return group.startAlltoall(i, null, o, null, timeout);
        }

        @Override
        public Work alltoallv(DenseBuffer i, int[] s, DenseBuffer o, int[] r) {
            return group.startAlltoall(
                    i,
                    Objects.requireNonNull(s, "alltoallv: sendCounts is null"),
                    o,
                    Objects.requireNonNull(r, "alltoallv: receiveCounts is null"),
                    timeout);
        }

        @Override
        public Optional<ProcessGroup> split(int color, int key) {
            return group.split(color, key);
        }

        @Override
        public Optional<ProcessGroup> newGroup(int... ranks) {
            return group.newGroup(ranks);
        }

        @Override
        public java.util.Optional<BufferAllocator> allocator() {
            return group.allocator();
        }

        @Override
        public void close() {
            group.close();
        }

        @Override
        public String toString() {
            return group + " (timeout " + timeout + ")";
        }
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "[" + who() + "]";
    }
}
