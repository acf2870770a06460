package dev.cohort.gloo;

import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.CollectiveException;
import dev.cohort.api.collective.CollectiveMismatchException;
import dev.cohort.api.collective.CollectiveTimeoutException;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.OpKind;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.api.collective.Work;
import dev.cohort.gloo.c10d.GlooWork;
import dev.cohort.gloo.c10d.NativeCache;
import dev.cohort.gloo.c10d.NativeTensors;
import dev.cohort.libtorch.LibTorch;
import dev.cohort.runtime.AbstractProcessGroup;
import dev.cohort.runtime.CallQueue;
import dev.cohort.runtime.RankNames;
import dev.cohort.runtime.Reduction;
import dev.cohort.tcp.algorithms.Disagreement;
import dev.cohort.tcp.algorithms.MeshCollectives;
import dev.cohort.tcp.transport.PeerMesh;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.BiFunction;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.chrono.Milliseconds;
import org.bytedeco.pytorch.AllgatherOptions;
import org.bytedeco.pytorch.AllreduceOptions;
import org.bytedeco.pytorch.BarrierOptions;
import org.bytedeco.pytorch.BroadcastOptions;
import org.bytedeco.pytorch.ProcessGroupGloo;
import org.bytedeco.pytorch.ReduceScatterOptions;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;

/**
 * A {@link dev.cohort.api.collective.ProcessGroup} on c10d's {@code ProcessGroupGloo}.
 *
 * <p>Mapping: allreduce, broadcast and barrier map one to one; allgather uses the flat
 * {@code _allgather_base} and reduce-scatter {@code _reduce_scatter_base}, so one tensor covers the
 * whole buffer (Gloo would read a list of tensors as replicas). AVG runs as SUM followed by a local
 * division, so its integer semantics match the other engines'. Gloo has no allgatherv: every rank
 * pads its block to the largest count, the padded blocks are gathered, and the result is compacted.
 *
 * <p>Execution: with the consistency check on, calls run one at a time in issue order through a
 * {@link CallQueue}, like the shm engine's: a caller that awaits at once runs its call itself, and
 * calls nobody awaits (DDP's gradient buckets, started during backward) run on the group's
 * communication thread while the caller computes. A call the group leaves to Gloo is checked on
 * the mesh, then handed to Gloo and waited for there, so the next call's check follows it.
 */
final class GlooProcessGroup extends AbstractProcessGroup {

    private static final System.Logger LOG = System.getLogger(GlooProcessGroup.class.getName());

    // Gloo names the peer as "Connection closed by peer [ADDR]:PORT" or "Read error [ADDR]:PORT: ..."
    // (the latter when the peer's socket was reset, e.g. rank 0 killed while another rank reads).
    private static final Pattern PEER = Pattern.compile("(?:peer|error) \\[?([0-9a-fA-F.:]+?)\\]?:(\\d+)");

    private final ProcessGroupGloo pg;
    private final NativeCache cache = new NativeCache();
    private final String label;
    private final Map<String, String> ranksByAddress;
    /** How messages name the ranks. */
    private final RankNames names;
    /** The always-on consistency check (null when turned off); calls over it hold its lock. */
    private final PeerMesh mesh;

    private final MeshCollectives overMesh;
    /** Runs the calls over the mesh in issue order (null without the mesh: Gloo's own threads run them). */
    private final CallQueue queue;
    /** Which calls {@link #overMesh} carries; the others go to Gloo once the mesh checked them. */
    private final MeshRoute route;
    /** The first time the ranks disagreed: every later call is refused. */
    private final Disagreement disagreement = new Disagreement();

    private volatile StallWatch stallWatch;
    private final GlooWork.StallReport stallReport = new GlooWork.StallReport() {
        @Override
        public Duration after() {
            StallWatch w = stallWatch;
            return w == null ? Duration.ofDays(365) : w.stallTime();
        }

        @Override
        public void report(Collective call) {
            StallWatch w = stallWatch;
            if (w != null) {
                LOG.log(
                        System.Logger.Level.WARNING,
                        label + " " + who() + ": " + call.describe() + " has waited "
                                + w.stallTime().toSeconds() + " s; " + w.laggards(call.sequence())
                                + "; it fails at its timeout (" + timeout().toSeconds() + " s)" + whereTheRanksStand());
            }
        }
    };

    private final PeerMesh.StallReport meshStall = new PeerMesh.StallReport() {
        @Override
        public Duration after() {
            return stallReport.after();
        }

        @Override
        public void report(String what, String waitingFor) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    what + " has waited " + after().toSeconds() + " s; " + waitingFor + "; it fails at its timeout ("
                            + timeout().toSeconds() + " s)" + whereTheRanksStand());
        }
    };

    GlooProcessGroup(
            ProcessGroupGloo pg,
            String label,
            int rank,
            int size,
            Duration timeout,
            Map<String, String> ranksByAddress,
            PeerMesh mesh,
            MeshRoute route,
            RankNames names,
            CallQueue.Options queueOptions) {
        super(rank, size, timeout);
        this.names = Objects.requireNonNull(names, "names");
        this.route = Objects.requireNonNull(route, "route");
        this.pg = pg;
        this.label = label;
        this.ranksByAddress = ranksByAddress;
        this.mesh = mesh;
        this.overMesh = mesh == null ? null : new MeshCollectives(mesh, rank, size, label + " " + who());
        this.queue = mesh == null
                ? null
                : new CallQueue(
                        "cohort-gloo-" + label.replace(' ', '-') + "-rank-" + rank,
                        c -> "waiting for its peers over the mesh",
                        e -> {},
                        queueOptions);
    }

    /** Watches this group's collectives for stalls from now on (closed with the group). */
    void watchStalls(StallWatch watch) {
        this.stallWatch = watch;
    }

    /** Without the mesh, the kinds only the mesh carries are composed from Gloo's. */
    @Override
    protected boolean runsNatively(OpKind kind) {
        return mesh != null || MeshRoute.throughGloo(kind);
    }

    @Override
    protected Work start(Collective call, Duration timeout) {
        disagreement.refuseIfSeen(label, who(), call);
        StallWatch watch = stallWatch;
        if (watch != null) {
            watch.issued(call.sequence());
        }
        if (mesh == null) {
            return startData(call, timeout, Math.max(1, timeout.toMillis()));
        }
        return queue.submit(who(), call, timeout, this::runChecked);
    }

    /** On the queue: the call over the mesh, or checked there and then run by Gloo, to the end. */
    private void runChecked(CallQueue.Call running) {
        Collective call = running.collective();
        long deadline = running.deadline();
        Work gloo;
        synchronized (mesh) {
            try {
                if (route.overMesh(call)) {
                    overMesh.carry(call, deadline, meshStall);
                    return;
                }
                overMesh.agree(call, deadline, meshStall);
            } catch (CollectiveMismatchException e) {
                throw disagreement.seen(e);
            }
            Duration left = Duration.ofNanos(Math.max(1_000_000, deadline - System.nanoTime()));
            gloo = startData(call, left, left.toMillis());
        }
        gloo.await();
    }

    private Work startData(Collective call, Duration timeout, long ms) {
        if (movesNothing(call)) {
            return GlooWork.completed(call);
        }
        NativeTensors t = new NativeTensors(cache);
        try {
            return switch (call.kind()) {
                case ALLREDUCE -> {
                    Tensor data = t.wrap(call.input(), true, true);
                    AllreduceOptions o = reductionOptions(
                            call,
                            ms,
                            (op, time) -> new AllreduceOptions().reduceOp(op).timeout(time));
                    yield work(
                            call,
                            pg.allreduce(t.keep(new TensorVector(data)), o),
                            t,
                            averaging(call, call.input()),
                            timeout);
                }
                case BROADCAST -> {
                    boolean root = call.root() == rank();
                    Tensor data = t.wrap(call.input(), root, !root);
                    BroadcastOptions o = cache.options(
                            List.of(OpKind.BROADCAST, call.root(), ms),
                            () -> new BroadcastOptions().rootRank(call.root()).timeout(new Milliseconds(ms)));
                    yield work(call, pg.broadcast(t.keep(new TensorVector(data)), o), t, () -> {}, timeout);
                }
                case ALLGATHER -> {
                    Tensor in = t.wrap(call.input(), true, false);
                    Tensor out = t.wrap(call.output(), false, true);
                    AllgatherOptions o = allgatherOptions(ms);
                    yield work(call, pg._allgather_base(out, in, o), t, () -> {}, timeout);
                }
                case ALLGATHERV -> allgatherv(call, t, ms, timeout);
                case REDUCE_SCATTER -> {
                    Tensor in = t.wrap(call.input(), true, false);
                    Tensor out = t.wrap(call.output(), false, true);
                    ReduceScatterOptions o = reductionOptions(
                            call,
                            ms,
                            (op, time) ->
                                    new ReduceScatterOptions().reduceOp(op).timeout(time));
                    yield work(call, pg._reduce_scatter_base(out, in, o), t, averaging(call, call.output()), timeout);
                }
                case BARRIER ->
                    work(
                            call,
                            pg.barrier(cache.options(
                                    List.of(OpKind.BARRIER, ms),
                                    () -> new BarrierOptions().timeout(new Milliseconds(ms)))),
                            t,
                            () -> {},
                            timeout);
                default -> throw new IllegalStateException(call.kind().label() + " is not given to Gloo");
            };
        } catch (RuntimeException e) {
            t.close();
            throw translate(call, e);
        }
    }

    /**
     * Whether {@code call}'s buffers hold nothing to move, so that it completes at once without Gloo
     * (allgatherv looks at its counts itself).
     */
    private static boolean movesNothing(Collective call) {
        return switch (call.kind()) {
            case ALLREDUCE, BROADCAST, ALLGATHER -> call.input().count() == 0;
            case REDUCE_SCATTER -> call.output().count() == 0;
            default -> false;
        };
    }

    /**
     * The options of Gloo's call for the reduction {@code call} ({@code make} given its reduce op and
     * timeout), made once for each kind, op and timeout and kept in the cache.
     */
    private <P extends Pointer> P reductionOptions(
            Collective call, long ms, BiFunction<org.bytedeco.pytorch.ReduceOp, Milliseconds, P> make) {
        return cache.options(
                List.of(call.kind(), redOp(call.op()), ms),
                () -> make.apply(new org.bytedeco.pytorch.ReduceOp(redOp(call.op())), new Milliseconds(ms)));
    }

    private AllgatherOptions allgatherOptions(long ms) {
        return cache.options(List.of(OpKind.ALLGATHER, ms), () -> new AllgatherOptions().timeout(new Milliseconds(ms)));
    }

    private Work allgatherv(Collective call, NativeTensors t, long ms, Duration timeout) {
        int[] counts = call.counts();
        int max = 0;
        for (int c : counts) {
            max = Math.max(max, c);
        }
        if (max == 0) {
            return GlooWork.completed(call);
        }
        DenseBuffer padded = DenseBuffer.allocateDirect(call.input().dataType(), max);
        padded.slice(0, call.input().count()).copyFrom(call.input());
        DenseBuffer gathered = DenseBuffer.allocateDirect(call.input().dataType(), max * size());
        Tensor in = t.tensor(padded);
        Tensor out = t.tensor(gathered);
        int block = max;
        Runnable unpad = () -> {
            int offset = 0;
            for (int r = 0; r < counts.length; r++) {
                call.output().slice(offset, counts[r]).copyFrom(gathered.slice(r * block, counts[r]));
                offset += counts[r];
            }
        };
        return work(call, pg._allgather_base(out, in, allgatherOptions(ms)), t, unpad, timeout);
    }

    private Work work(
            Collective call, org.bytedeco.pytorch.Work w, NativeTensors t, Runnable finish, Duration timeout) {
        return new GlooWork(call, w, t, finish, timeout, e -> translate(call, e), stallReport);
    }

    /** Turns a c10d error into one that names this rank, the operation and, where known, the peer. */
    CollectiveException translate(Collective call, RuntimeException e) {
        if (e instanceof CollectiveException ours) {
            return ours;
        }
        String message = String.valueOf(e.getMessage());
        String peer = "";
        List<Integer> lost = new ArrayList<>();
        Matcher m = PEER.matcher(message);
        if (m.find()) {
            String ranks = ranksByAddress.get(m.group(1));
            if (ranks != null) {
                for (String r : ranks.split(",")) {
                    lost.add(Integer.parseInt(r.trim()));
                }
            }
            peer = "; lost peer " + m.group(1) + (ranks == null ? "" : " (rank(s) " + ranks + ")" + names.after(lost));
        }
        String text = label + " " + who() + ": " + call.describe() + " failed" + peer + ": " + firstLine(message);
        if (message.contains("Timed out") || message.contains("timed out") || message.contains("timeout")) {
            return new CollectiveTimeoutException(text, e, rank(), call, lost);
        }
        return new CollectiveException(text, e, rank(), call, lost);
    }

    @Override
    protected void release() {
        if (queue != null) {
            queue.close(this::releaseNative);
        } else {
            releaseNative();
        }
    }

    private void releaseNative() {
        try {
            pg.shutdown();
        } catch (RuntimeException e) {
            // the group is going away; a failed shutdown of a broken group changes nothing
        }
        LibTorch.release(pg);
        cache.close();
        StallWatch watch = stallWatch;
        if (watch != null) {
            watch.close();
        }
        if (mesh != null) {
            mesh.close();
        }
    }

    @Override
    protected String who() {
        return "rank " + rank() + " of " + size();
    }

    /** What finishes {@code call} once Gloo has summed into {@code result}: AVG divides (Gloo has no AVG). */
    private Runnable averaging(Collective call, DenseBuffer result) {
        return call.op() == ReduceOp.AVG ? () -> Reduction.finish(ReduceOp.AVG, result, size()) : () -> {};
    }

    private static org.bytedeco.pytorch.ReduceOp.RedOpType redOp(ReduceOp op) {
        return switch (op) {
            case SUM, AVG -> org.bytedeco.pytorch.ReduceOp.RedOpType.SUM;
            case PRODUCT -> org.bytedeco.pytorch.ReduceOp.RedOpType.PRODUCT;
            case MIN -> org.bytedeco.pytorch.ReduceOp.RedOpType.MIN;
            case MAX -> org.bytedeco.pytorch.ReduceOp.RedOpType.MAX;
        };
    }

    private static String firstLine(String s) {
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }
}
