package dev.cohort.torch;

import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.api.collective.Work;
import dev.cohort.libtorch.LibTorch;
import dev.cohort.libtorch.ScalarTypes;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;

/**
 * ZeRO (DeepSpeed's Zero Redundancy Optimizer), stages 1 and 2, by whole parameters: each trained
 * parameter has one owner rank (assigned largest first to the rank with the fewest bytes so far,
 * as PyTorch's {@code ZeroRedundancyOptimizer} does), and only the owner steps it, so only the
 * owner's optimizer holds its state (momentum, Adam's moments): about 1/N of the state per rank.
 *
 * <p>The optimizer is the caller's own, over every parameter: libtorch's optimizers skip a
 * parameter without a gradient and create its state on its first step, so taking the foreign
 * parameters' gradients away before each step is what keeps their state off this rank. After the
 * step every rank's parameters are the owners' (one allgather per element type, of each rank's
 * parameters packed in a segment padded to the largest rank's).
 *
 * <p>Stage 1 averages every gradient as unsharded training does ({@link GradientBuckets}) and
 * drops the foreign ones before the step; stage 2 packs the gradients in the same per-owner
 * segments and reduce-scatters them at the step, so each rank receives only its own parameters'
 * averaged gradients: half the traffic of an allreduce (this class is then the optimizer's
 * {@link GradientAverager}; without backward hooks it does not overlap backward).
 */
final class ZeroShards implements GradientAverager {

    private final ProcessGroup group;
    private final int stage;
    /** The 16-bit type stage 2's gradients travel as, or null. */
    private final DataType compression;
    private final boolean findUnused;
    /** The trained parameters that take gradients, owning handles; an index here is a parameter's id. */
    private final List<Tensor> params = new ArrayList<>();
    private final int[] owner;
    /** Each parameter's offset in its owner's segment, in elements. */
    private final long[] offsetOf;
    /** Stage 2: each own parameter's gradient, a view into its segment's reduced block (null for foreign ones). */
    private final Tensor[] gradientViews;
    private final List<Segment> segments = new ArrayList<>();
    private long waitedNanos;

    /**
     * @param trained     the parameters whose gradients are averaged (those not taking gradients are left alone)
     * @param stage       1 or 2
     * @param compression stage 2: {@link DataType#BFLOAT16} or {@link DataType#FLOAT16} to reduce float32
     *                    gradients as 16-bit floats, or null
     */
    ZeroShards(ProcessGroup group, TensorVector trained, int stage, DataType compression, boolean findUnused) {
        if (stage != 1 && stage != 2) {
            throw new IllegalArgumentException("ZeRO stage must be 1 or 2, got " + stage);
        }
        this.group = group;
        this.stage = stage;
        this.compression = stage == 2 ? compression : null;
        this.findUnused = findUnused;
        for (long i = 0; i < trained.size(); i++) {
            Tensor p = LibTorch.retain(new Tensor(trained.get(i)));
            if (p.requires_grad()) {
                TensorBuffers.checkMovable(p, "parameter " + i + " of the optimizer");
                params.add(p);
            }
        }
        long[] bytes = new long[params.size()];
        for (int id = 0; id < bytes.length; id++) {
            bytes[id] = params.get(id).numel() * ScalarTypes.dataType(params.get(id).scalar_type()).byteSize();
        }
        owner = assign(bytes, group.size());
        offsetOf = new long[params.size()];
        gradientViews = new Tensor[params.size()];
        Map<DataType, Segment> byType = new LinkedHashMap<>();
        for (int id = 0; id < params.size(); id++) {
            DataType type = ScalarTypes.dataType(params.get(id).scalar_type());
            byType.computeIfAbsent(type, Segment::new).add(id);
        }
        for (Segment s : byType.values()) {
            s.allocate();
            segments.add(s);
        }
    }

    /**
     * Owners for parameters of {@code bytes}: largest first (ties: lower id), each to the rank
     * holding the fewest bytes so far (ties: lower rank). Every rank computes the same.
     */
    static int[] assign(long[] bytes, int ranks) {
        int[] owners = new int[bytes.length];
        long[] load = new long[ranks];
        int[] order = IntStream.range(0, bytes.length).boxed()
                .sorted(Comparator.<Integer>comparingLong(i -> -bytes[i]).thenComparingInt(i -> i))
                .mapToInt(Integer::intValue).toArray();
        for (int id : order) {
            int least = 0;
            for (int r = 1; r < ranks; r++) {
                if (load[r] < load[least]) {
                    least = r;
                }
            }
            owners[id] = least;
            load[least] += bytes[id];
        }
        return owners;
    }

    int stage() {
        return stage;
    }

    ProcessGroup group() {
        return group;
    }

    /** Whether this rank owns {@code p} (steps it and holds its optimizer state); false for a tensor not trained here. */
    boolean owns(Tensor p) {
        for (int id = 0; id < params.size(); id++) {
            if (params.get(id).is_same(p)) {
                return owner[id] == group.rank();
            }
        }
        return false;
    }

    /** The elements of the parameters this rank owns. */
    long ownedElements() {
        long n = 0;
        for (int id = 0; id < params.size(); id++) {
            if (owner[id] == group.rank()) {
                n += params.get(id).numel();
            }
        }
        return n;
    }

    /**
     * Parameter {@code id}'s memory as a 1-d tensor outside autograd, made afresh at each use:
     * loading a checkpoint into the model gives its parameters new storage.
     */
    private Tensor flat(int id) {
        return params.get(id).detach().view(-1);
    }

    /** Stage 1, before the step: the foreign parameters' gradients set to none, so the optimizer leaves them alone. */
    void dropForeignGradients() {
        try (PointerScope temporaries = new PointerScope()) {
            for (int id = 0; id < params.size(); id++) {
                if (owner[id] != group.rank() && params.get(id).grad().defined()) {
                    params.get(id).mutable_grad().put(new Tensor());
                }
            }
        }
    }

    /** After the step: every rank's parameters become their owners'. */
    void gatherParameters() {
        if (group.size() == 1) {
            return;
        }
        long began = System.nanoTime();
        int me = group.rank();
        try (PointerScope temporaries = new PointerScope()) {
            List<Work> works = new ArrayList<>();
            for (Segment s : segments) {
                for (int id : s.byRank.get(me)) {
                    s.mineFlat.narrow(0, offsetOf[id], params.get(id).numel()).copy_(flat(id));
                }
                works.add(group.allgather(s.mine, s.all));
            }
            for (int k = 0; k < segments.size(); k++) {
                Segment s = segments.get(k);
                works.get(k).await();
                for (int r = 0; r < group.size(); r++) {
                    if (r == me) {
                        continue;
                    }
                    for (int id : s.byRank.get(r)) {
                        flat(id).copy_(s.allFlat.narrow(0, (long) r * s.size + offsetOf[id], params.get(id).numel()));
                    }
                }
            }
        } finally {
            waitedNanos += System.nanoTime() - began;
        }
    }

    /**
     * Stage 2: reduce-scatters the gradients, so that each own parameter's {@code .grad} is the
     * average (a view into this rank's reduced block) and each foreign one's is none. A parameter
     * without a gradient counts as zeros; with {@code findUnused}, one no rank had a gradient for
     * keeps none.
     */
    @Override
    public void averageGradients() {
        if (group.size() == 1) {
            return;                              // one rank's gradients are the average, and all its own
        }
        long began = System.nanoTime();
        int me = group.rank();
        try (PointerScope temporaries = new PointerScope()) {
            int[] used = findUnused ? new int[params.size()] : null;
            List<Work> works = new ArrayList<>();
            for (Segment s : segments) {
                for (int r = 0; r < group.size(); r++) {
                    for (int id : s.byRank.get(r)) {
                        Tensor slot = s.gradsFlat.narrow(0, (long) r * s.size + offsetOf[id], params.get(id).numel());
                        Tensor g = params.get(id).grad();
                        if (g.defined()) {
                            slot.copy_(g.reshape(-1));
                            if (used != null) {
                                used[id] = 1;
                            }
                        } else {
                            slot.zero_();
                        }
                    }
                }
                if (s.wire == null) {
                    works.add(group.reduceScatter(s.grads, s.reduced, ReduceOp.AVG));
                } else {
                    s.gradsFlat.div_(new Scalar((double) group.size()));   // so 16-bit sums cannot overflow
                    s.wireFlat.copy_(s.gradsFlat);
                    works.add(group.reduceScatter(s.wire, s.wireReduced, ReduceOp.SUM));
                }
            }
            Work usedAnywhere = used != null ? group.allreduce(DenseBuffer.of(used), ReduceOp.MAX) : null;
            for (int k = 0; k < segments.size(); k++) {
                Segment s = segments.get(k);
                works.get(k).await();
                if (s.wire != null) {
                    s.reducedFlat.copy_(s.wireReducedFlat);
                }
            }
            if (usedAnywhere != null) {
                usedAnywhere.await();
            }
            for (int id = 0; id < params.size(); id++) {
                Tensor p = params.get(id);
                if (owner[id] == me && (used == null || used[id] == 1)) {
                    p.mutable_grad().put(gradientViews[id]);
                } else if (p.grad().defined()) {
                    p.mutable_grad().put(new Tensor());
                }
            }
        } finally {
            waitedNanos += System.nanoTime() - began;
        }
    }

    /**
     * Stage 2: scales the own gradients so that the L2 norm of the whole averaged gradient (every
     * rank's shard; one allreduce of the squared sums) is at most {@code maxNorm}; returns that
     * norm before clipping. The same coefficient as {@code clip_grad_norm_}: maxNorm / (norm + 1e-6).
     */
    double clipGradNorm(double maxNorm) {
        try (PointerScope temporaries = new PointerScope()) {
            double[] squares = {0};
            for (int id = 0; id < params.size(); id++) {
                Tensor g = params.get(id).grad();
                if (owner[id] == group.rank() && g.defined()) {
                    double norm = g.norm().item_double();
                    squares[0] += norm * norm;
                }
            }
            group.allreduce(DenseBuffer.of(squares), ReduceOp.SUM).await();
            double total = Math.sqrt(squares[0]);
            double coefficient = maxNorm / (total + 1e-6);
            if (coefficient < 1) {
                for (int id = 0; id < params.size(); id++) {
                    Tensor g = params.get(id).grad();
                    if (owner[id] == group.rank() && g.defined()) {
                        g.mul_(new Scalar(coefficient));
                    }
                }
            }
            return total;
        }
    }

    @Override
    public void clearGradients() {
        try (PointerScope temporaries = new PointerScope()) {
            for (Tensor p : params) {
                if (p.grad().defined()) {
                    p.mutable_grad().put(new Tensor());
                }
            }
        }
    }

    /** No hooks: nothing counts backward's gradients. */
    @Override
    public long gradientsSeen() {
        return 0;
    }

    /** No hooks start communication during backward, so there is nothing to pause. */
    @Override
    public void pauseHooks() {
    }

    @Override
    public void resumeHooks() {
    }

    /** Time spent in gradient reduce-scatters and parameter allgathers. */
    @Override
    public synchronized long communicationWaitNanos() {
        return waitedNanos;
    }

    /** Stage 2's reduce-scatter input per step (the 16-bit copy where compressed). */
    @Override
    public long bytesPerStep() {
        long bytes = 0;
        for (Segment s : segments) {
            bytes += s.wire != null ? s.wire.byteSize() : s.grads.byteSize();
        }
        return bytes;
    }

    /** The parameters of one element type, each rank's packed in a segment padded to the largest. */
    private final class Segment {
        final DataType type;
        final List<List<Integer>> byRank = new ArrayList<>();
        /** Elements per rank's segment: the largest rank's total (at least 1). */
        int size;
        DenseBuffer mine;
        DenseBuffer all;
        Tensor mineFlat;
        Tensor allFlat;
        /** Stage 2: every rank's gradients in segments, this rank's reduced block, and their 16-bit copies when compressed. */
        DenseBuffer grads;
        DenseBuffer reduced;
        Tensor gradsFlat;
        Tensor reducedFlat;
        DenseBuffer wire;
        DenseBuffer wireReduced;
        Tensor wireFlat;
        Tensor wireReducedFlat;

        Segment(DataType type) {
            this.type = type;
            for (int r = 0; r < group.size(); r++) {
                byRank.add(new ArrayList<>());
            }
        }

        void add(int id) {
            byRank.get(owner[id]).add(id);
        }

        void allocate() {
            long largest = 1;
            for (List<Integer> ids : byRank) {
                long at = 0;
                for (int id : ids) {
                    offsetOf[id] = at;
                    at += params.get(id).numel();
                }
                largest = Math.max(largest, at);
            }
            size = Math.toIntExact(largest);
            int total = Math.toIntExact((long) size * group.size());
            if (group.size() == 1) {
                return;
            }
            mine = DenseBuffer.allocateDirect(type, size);
            all = DenseBuffer.allocateDirect(type, total);
            mineFlat = LibTorch.retain(TensorBuffers.tensor(mine));
            allFlat = LibTorch.retain(TensorBuffers.tensor(all));
            if (stage < 2) {
                return;
            }
            grads = DenseBuffer.allocateDirect(type, total);
            reduced = DenseBuffer.allocateDirect(type, size);
            gradsFlat = LibTorch.retain(TensorBuffers.tensor(grads));
            reducedFlat = LibTorch.retain(TensorBuffers.tensor(reduced));
            for (int id : byRank.get(group.rank())) {
                gradientViews[id] = LibTorch.retain(reducedFlat.narrow(0, offsetOf[id], params.get(id).numel())
                        .view(params.get(id).sizes().vec().get()));
            }
            if (compression != null && type == DataType.FLOAT32) {
                wire = DenseBuffer.allocateDirect(compression, total);
                wireReduced = DenseBuffer.allocateDirect(compression, size);
                wireFlat = LibTorch.retain(TensorBuffers.tensor(wire));
                wireReducedFlat = LibTorch.retain(TensorBuffers.tensor(wireReduced));
            }
        }
    }
}
