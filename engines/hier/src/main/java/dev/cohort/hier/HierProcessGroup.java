package dev.cohort.hier;

import dev.cohort.api.collective.BufferAllocator;
import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.JoinException;
import dev.cohort.api.collective.ObjectCollectives;
import dev.cohort.api.collective.OpKind;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.api.collective.Work;
import dev.cohort.runtime.AbstractProcessGroup;
import dev.cohort.runtime.CallQueue;
import dev.cohort.runtime.Reduction;
import dev.cohort.runtime.Reissue;
import dev.cohort.runtime.Subgroup;
import dev.cohort.runtime.auth.JobSecret;
import dev.cohort.runtime.p2p.Directory;
import dev.cohort.runtime.p2p.PostOffice;
import dev.cohort.tcp.TcpGroups;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * A {@link ProcessGroup} of all ranks of the job, built from the shm group of each host and the
 * group of the hosts' leaders, on gloo, tcp or mpi (see {@link Stages} for the words <em>within the host</em>,
 * <em>between hosts</em> and <em>verdict</em>).
 *
 * <ul>
 * <li>allreduce: allreduce within the host (the host's partial result, AVG as SUM), allreduce of
 *   the partials between hosts (AVG divides by the world size there), broadcast within the host
 *   from the leader. A float AVG on hosts of equally many ranks, a power of two, averages in both
 *   stages instead (the same bits, without a pass of its own for the division). The leaders
 *   compute the same bits (the engine's guarantee) and pass them on, so every rank holds the same
 *   bits.
 * <li>broadcast: on the root's host, broadcast from the root (so the leader has it); between
 *   hosts, broadcast from the root host's leader; on the other hosts, broadcast from the leader.
 * <li>allgather(v): gather within the host (by local rank), then between hosts (host by host),
 *   then the leader moves each rank's block to its place in global rank order (a host's ranks
 *   need not be contiguous) and broadcasts the result within the host.
 * <li>reduce-scatter: allreduce of a copy of the input within the host; when each host's ranks
 *   are contiguous and every host runs as many, reduce-scatter of host-sized blocks between hosts
 *   and broadcast of the host's block within it, else the allreduce above; each rank keeps its block.
 * <li>barrier: barrier within the host, barrier between hosts, and the verdict releases the rest.
 * </ul>
 * With one host only the stages within it run (the allgathers still put the blocks in global
 * rank order). Calls run one at a time in issue order ({@link CallQueue}); each has one deadline
 * for all its stages.
 */
final class HierProcessGroup extends AbstractProcessGroup {

    private static final System.Logger LOG = System.getLogger(HierProcessGroup.class.getName());

    private final Stages stages;
    private final HostLayout layout;
    /** Where spanning subgroups listen (see {@link #listenOn}). */
    private volatile InetAddress listen = InetAddress.getLoopbackAddress();
    /** What those connections prove (see {@link #listenOn}). */
    private volatile Optional<JobSecret> secret = Optional.empty();
    /** When a spanning subgroup's collective that waits this long is reported. */
    private static final Duration STALL_TIME = Duration.ofSeconds(30);

    private final CallQueue queue;
    /** This rank's part of the engine between hosts: null on one host, and on ranks that hold none. */
    private final LeadersGroup leaders;
    /** The first failure's message, once a call failed: closing then abandons the leaders' group with it. */
    private volatile String failure;

    private final HostView hostView;
    /** Intermediate results, reused from call to call (calls run one at a time). */
    private final Scratch hostGathered = new Scratch();

    private final Scratch gathered = new Scratch();
    private final Scratch reduced = new Scratch();

    HierProcessGroup(Stages stages, HostLayout layout, int rank, Duration timeout, LeadersGroup leaders) {
        super(rank, layout.worldSize(), timeout);
        this.stages = stages;
        this.layout = layout;
        this.leaders = leaders;
        // A rank waiting for its leader's verdict may wait past the deadline (see Stages).
        this.queue = new CallQueue(
                "cohort-hier-rank-" + rank,
                c -> "in the stage " + stages.current,
                e -> abandonLeaders(e.getMessage()),
                Stages.VERDICT_GRACE.multipliedBy(2).plusSeconds(1));
        this.hostView = new HostView(timeout);
    }

    /** The group of this host's ranks (local ranks), whose calls queue with this group's. */
    ProcessGroup hostView() {
        return hostView;
    }

    @Override
    protected String who() {
        return stages.who;
    }

    /** This host's shm arena: the stages within the host move buffers allocated there without copying them. */
    @Override
    public Optional<BufferAllocator> allocator() {
        return stages.hostGroup.allocator();
    }

    /**
     * Hierarchical algorithms exist for the first five kinds; reduce, gather(v), scatter(v) and
     * all-to-all(v) across hosts are composed from them (within one host they run on the host's group).
     */
    @Override
    protected boolean runsNatively(OpKind kind) {
        return kind.isCore() || layout.hosts == 1;
    }

    /**
     * Where this rank listens for the connections of subgroups that span hosts (the address that
     * reaches the other hosts) and the job's secret they prove; set by the engine before the group
     * is used.
     */
    void listenOn(InetAddress address, Optional<JobSecret> secret) {
        this.listen = address;
        this.secret = secret;
    }

    /**
     * A subgroup of one host's ranks runs on shared memory (the engine's maker); one that spans
     * hosts on a mesh of TCP connections of its own (the tcp engine's algorithms), with messages
     * through a post office of its own. Every rank of this group takes part in one allgather of
     * the new meshes' and post offices' addresses, members or not.
     */
    @Override
    protected ProcessGroup connectSubgroup(Subgroup spec) {
        boolean spans = false;
        for (int g : spec.global()) {
            spans |= layout.hostOf(g) != stages.host;
        }
        if (!spans) {
            gatherAddresses(new byte[0]);
            return super.connectSubgroup(spec);
        }
        String label = "hier " + spec.label();
        String who = label + " rank " + spec.rank() + " of " + spec.size();
        TcpGroups.Listening mesh;
        try {
            mesh = TcpGroups.listen(listen, spec.size(), who);
        } catch (JoinException e) {
            gatherAddresses(new byte[0]);
            throw e;
        }
        Directory.Gathered letters = Directory.gathered();
        PostOffice office = new PostOffice(spec.rank(), spec.size(), listen, letters, who, spec.names(), secret);
        List<String> meshAddresses = new ArrayList<>();
        List<byte[]> officeAddresses = new ArrayList<>();
        try {
            List<byte[]> all =
                    gatherAddresses((mesh.address() + "|" + new String(letters.mine(), StandardCharsets.UTF_8))
                            .getBytes(StandardCharsets.UTF_8));
            for (int member : spec.members()) {
                String[] both = new String(all.get(member), StandardCharsets.UTF_8).split("\\|", 2);
                meshAddresses.add(both[0]);
                officeAddresses.add(both[1].getBytes(StandardCharsets.UTF_8));
            }
        } catch (RuntimeException e) {
            office.close();
            mesh.close();
            throw e;
        }
        letters.fill(officeAddresses);
        AbstractProcessGroup group;
        try {
            group = mesh.connect(meshAddresses, spec.rank(), spec.timeout(), STALL_TIME, label, spec.names(), secret);
        } catch (RuntimeException e) {
            office.close();
            throw e;
        }
        group.messagesThrough(office);
        return group;
    }

    /** Left out of every subgroup of a split: still in the allgather of the spanning ones' addresses. */
    @Override
    protected void skipSubgroup() {
        gatherAddresses(new byte[0]);
    }

    private List<byte[]> gatherAddresses(byte[] mine) {
        return ObjectCollectives.allgatherBytes(this, mine);
    }

    @Override
    protected Work start(Collective call, Duration timeout) {
        return queue.submit(stages.who, call, timeout, running -> execute(call, running.deadline()));
    }

    private void execute(Collective c, long deadline) {
        String d = c.describe();
        switch (c.kind()) {
            case ALLREDUCE -> allreduce(d, c.input(), c.op(), deadline);
            case BROADCAST -> broadcast(d, c.input(), c.root(), deadline);
            case ALLGATHER ->
                gather(d, c.input(), c.output(), uniformCounts(c.input().count()), true, deadline);
            case ALLGATHERV -> gather(d, c.input(), c.output(), c.counts(), false, deadline);
            case REDUCE_SCATTER -> reduceScatter(d, c.input(), c.output(), c.op(), deadline);
            case BARRIER -> {
                stages.withinHost(d, deadline, ProcessGroup::barrier);
                stages.betweenHosts(d, deadline, g -> g.barrier().await());
            }
            default -> stages.withinHost(d, deadline, g -> Reissue.on(g, c)); // one host (see runsNatively)
        }
    }

    private void allreduce(String d, DenseBuffer data, ReduceOp op, long deadline) {
        if (layout.hosts == 1) {
            stages.withinHost(d, deadline, g -> g.allreduce(data, op));
            return;
        }
        if (averagesInStages(data, op)) {
            // AVG within the host (divides by its 2^m ranks: exact) and AVG between hosts: the
            // same bits as the sum divided by the world size, with no pass of its own for the division
            stages.withinHost(d, deadline, g -> g.allreduce(data, ReduceOp.AVG));
            stages.betweenHostsThenShare(
                    d, deadline, g -> g.allreduce(data, ReduceOp.AVG).await(), data);
            return;
        }
        ReduceOp partial = op == ReduceOp.AVG ? ReduceOp.SUM : op;
        stages.withinHost(d, deadline, g -> g.allreduce(data, partial));
        stages.betweenHostsThenShare(
                d,
                deadline,
                g -> {
                    g.allreduce(data, partial).await();
                    Reduction.finish(op, data, size());
                },
                data);
    }

    /**
     * Whether an AVG may divide in each stage: float32 or float64 on hosts of equally many ranks,
     * a power of two of them, so the division within the host is exact and the one between hosts
     * rounds once, as dividing the whole sum would.
     */
    private boolean averagesInStages(DenseBuffer data, ReduceOp op) {
        int perHost = size() / layout.hosts;
        return op == ReduceOp.AVG
                && layout.uniform
                && Integer.bitCount(perHost) == 1
                && (data.dataType() == DataType.FLOAT32 || data.dataType() == DataType.FLOAT64);
    }

    private void broadcast(String d, DenseBuffer data, int root, long deadline) {
        int rootHost = layout.hostOf(root);
        if (stages.host == rootHost) {
            stages.withinHost(d, deadline, g -> g.broadcast(data, layout.localOf(root)));
        }
        if (stages.host == rootHost) {
            stages.betweenHosts(d, deadline, g -> g.broadcast(data, rootHost).await());
        } else {
            stages.betweenHostsThenShare(
                    d, deadline, g -> g.broadcast(data, rootHost).await(), data);
        }
    }

    private int[] uniformCounts(int count) {
        int[] counts = new int[size()];
        java.util.Arrays.fill(counts, count);
        return counts;
    }

    /** allgather ({@code uniform}) and allgatherv: {@code counts} by global rank. */
    private void gather(String d, DenseBuffer input, DenseBuffer output, int[] counts, boolean uniform, long deadline) {
        int[] hostCounts = new int[layout.sizeOf(stages.host)];
        int[] hostTotals = new int[layout.hosts];
        for (int k = 0; k < layout.hosts; k++) {
            for (int j = 0; j < layout.sizeOf(k); j++) {
                int c = counts[layout.globalRank(k, j)];
                hostTotals[k] += c;
                if (k == stages.host) {
                    hostCounts[j] = c;
                }
            }
        }
        if (layout.hosts == 1 && layout.hostMajor) {
            stages.withinHost(
                    d, deadline, g -> uniform ? g.allgather(input, output) : g.allgatherv(input, output, hostCounts));
            return;
        }
        DataType type = input.dataType();
        DenseBuffer hostBlock = hostGathered.take(type, hostTotals[stages.host]);
        stages.withinHost(
                d, deadline, g -> uniform ? g.allgather(input, hostBlock) : g.allgatherv(input, hostBlock, hostCounts));
        if (layout.hosts == 1) {
            toRankOrder(hostBlock, output, counts);
            return;
        }
        stages.betweenHostsThenShare(
                d,
                deadline,
                g -> {
                    DenseBuffer all = layout.hostMajor ? output : gathered.take(type, output.count());
                    // Hosts of different sizes contribute blocks of different sizes, even to an allgather.
                    (uniform && layout.uniform ? g.allgather(hostBlock, all) : g.allgatherv(hostBlock, all, hostTotals))
                            .await();
                    if (!layout.hostMajor) {
                        toRankOrder(all, output, counts);
                    }
                },
                output);
    }

    /** Copies the blocks of {@code hostMajor} (host by host, local rank by local rank) to global rank order. */
    private void toRankOrder(DenseBuffer hostMajor, DenseBuffer output, int[] counts) {
        int[] offsets = new int[counts.length];
        for (int r = 1; r < counts.length; r++) {
            offsets[r] = offsets[r - 1] + counts[r - 1];
        }
        int at = 0;
        for (int k = 0; k < layout.hosts; k++) {
            for (int j = 0; j < layout.sizeOf(k); j++) {
                int r = layout.globalRank(k, j);
                output.slice(offsets[r], counts[r]).copyFrom(hostMajor.slice(at, counts[r]));
                at += counts[r];
            }
        }
    }

    private void reduceScatter(String d, DenseBuffer input, DenseBuffer output, ReduceOp op, long deadline) {
        DenseBuffer all = reduced.take(input.dataType(), input.count());
        all.copyFrom(input);
        if (layout.hosts == 1 || !layout.hostMajor || !layout.uniform) {
            allreduce(d, all, op, deadline);
            output.copyFrom(all.slice(rank() * output.count(), output.count()));
            return;
        }
        // Host k's ranks hold blocks k*m .. k*m+m-1: the leaders reduce-scatter host-sized blocks.
        ReduceOp partial = op == ReduceOp.AVG ? ReduceOp.SUM : op;
        int hostBlock = layout.sizeOf(stages.host) * output.count();
        DenseBuffer mine = gathered.take(input.dataType(), hostBlock);
        stages.withinHost(d, deadline, g -> g.allreduce(all, partial));
        stages.betweenHostsThenShare(
                d,
                deadline,
                g -> {
                    g.reduceScatter(all, mine, partial).await();
                    Reduction.finish(op, mine, size());
                },
                mine);
        output.copyFrom(mine.slice(layout.localOf(rank()) * output.count(), output.count()));
    }

    /** After a failure: leaves the engine between hosts, so the other hosts' leaders fail now instead of at their timeout. */
    private void abandonLeaders(String why) {
        if (failure == null) {
            failure = why;
        }
        if (leaders != null) {
            try {
                leaders.abandon().accept(why);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, stages.who + ": leaving the leaders' group after a failure: " + e);
            }
        }
    }

    @Override
    protected void release() {
        queue.close(() -> {});
        try {
            hostView.close();
            stages.hostGroup.close();
        } finally {
            String why = failure;
            if (why != null) {
                abandonLeaders("closed after a failure: " + why);
            } else if (leaders != null) {
                leaders.leave().run();
            }
        }
    }

    /** The ranks of this host as a group of their own (the backend's node group), sharing the call queue. */
    private final class HostView extends AbstractProcessGroup {

        /** Built once: it prefixes every call's messages. */
        private final String who;

        HostView(Duration timeout) {
            super(stages.hostGroup.rank(), stages.hostGroup.size(), timeout);
            this.who = stages.who + " host " + stages.host + " group";
        }

        @Override
        protected String who() {
            return who;
        }

        @Override
        public Optional<BufferAllocator> allocator() {
            return stages.hostGroup.allocator();
        }

        @Override
        protected Work start(Collective c, Duration timeout) {
            return queue.submit(
                    who(),
                    c,
                    timeout,
                    running -> stages.withinHost(c.describe(), running.deadline(), g -> Reissue.on(g, c)));
        }

        @Override
        protected void release() {
            // The hierarchical group owns the shm group and closes it.
        }
    }
}
