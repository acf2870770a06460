package dev.cohort.torch;

import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.api.collective.Work;
import dev.cohort.libtorch.LibTorch;
import dev.cohort.libtorch.ScalarTypes;
import java.util.ArrayList;
import java.util.List;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Optimizer;
import org.bytedeco.pytorch.OptimizerParamGroupVector;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;

/**
 * ZeRO (DeepSpeed's Zero Redundancy Optimizer), stages 1 and 2. Each parameter group of the
 * optimizer is laid flat ({@link FlatLayout}) and cut into one equal slice per rank; rank r's
 * <em>shard</em> is a tensor of its slice, and the caller's optimizer is given the shards in place
 * of the parameters (its options, learning rate and kind unchanged), so its state (momentum,
 * Adam's moments) exists for 1/N of the elements on each rank.
 *
 * <p>A step: the averaged gradients reach the shards (stage 1: every gradient averaged by the
 * {@link GradientBuckets}, overlapping backward where that pays, then this rank's slice copied out;
 * stage 2: the gradients packed flat and reduce-scattered at the step, so each rank receives only
 * its slice, averaged); the shards take this rank's slice of the parameters (so a parameter
 * changed in between, a checkpoint loaded into the model, is what gets stepped); the optimizer
 * steps the shards; one allgather per group brings every rank's stepped slice back into the
 * parameters.
 *
 * <p>The averaged gradients under ZeRO are the shards' ({@code optimizer.parameters()} lists the
 * shards); the parameters' own {@code .grad} keep the local, unaveraged gradients (stage 2) or
 * the averaged ones (stage 1). {@link #clipGradNorm} clips the whole averaged gradient's norm.
 */
final class ZeroShards implements GradientAverager {

    private final ProcessGroup group;
    private final int stage;
    /** Stage 1: the buckets that average every gradient; null at stage 2. */
    private final GradientBuckets buckets;
    /** Stage 2: the 16-bit type gradients are reduced in, or null. */
    private final DataType compression;

    private final List<Partition> partitions = new ArrayList<>();
    private long waitedNanos;
    /** Stage 2: run before the gradients' reduce-scatter (see {@link #announceBefore}), or null. */
    private Runnable announce;

    /**
     * Hands {@code optimizer}'s parameter groups this rank's shards in place of their parameters.
     *
     * @param buckets     stage 1's buckets over the trained parameters; null for stage 2
     * @param compression stage 2: {@link DataType#BFLOAT16} or {@link DataType#FLOAT16} to reduce float32 gradients
     *                    as 16-bit floats, or null
     * @throws IllegalArgumentException for a group that mixes element types or holds integers
     */
    ZeroShards(ProcessGroup group, Optimizer optimizer, int stage, GradientBuckets buckets, DataType compression) {
        if (stage != 1 && stage != 2) {
            throw new IllegalArgumentException("ZeRO stage must be 1 or 2, got " + stage);
        }
        this.group = group;
        this.stage = stage;
        this.buckets = buckets;
        this.compression = stage == 2 ? compression : null;
        OptimizerParamGroupVector groups = optimizer.param_groups();
        for (long g = 0; g < groups.size(); g++) {
            TensorVector params = groups.get(g).params();
            partitions.add(new Partition((int) g, params));
        }
        for (int g = 0; g < partitions.size(); g++) {
            try (PointerScope temporaries = new PointerScope()) {
                partitions.get(g).packParameters();
            }
            groups.get(g).params().put(partitions.get(g).shard);
        }
    }

    int stage() {
        return stage;
    }

    @Override
    public ProcessGroup group() {
        return group;
    }

    /** Each optimizer parameter group's layout of the parameters it had before the shards took their place. */
    List<FlatLayout> layouts() {
        return partitions.stream().map(p -> p.layout).toList();
    }

    /** The elements of this rank's shards (their padding included). */
    long shardElements() {
        return partitions.stream().mapToLong(p -> p.slice).sum();
    }

    @Override
    public void averageGradients() {
        if (buckets != null) {
            buckets.averageGradients(); // counts its own waiting
        }
        long began = System.nanoTime();
        try (PointerScope temporaries = new PointerScope()) {
            if (buckets != null) {
                for (Partition p : partitions) {
                    p.packGradients();
                }
            } else {
                reduceScatterGradients();
            }
            for (Partition p : partitions) {
                p.shard.mutable_grad().put(p.shardGrad);
            }
        } finally {
            waitedNanos += System.nanoTime() - began;
        }
    }

    @Override
    public void announceBefore(Runnable announce) {
        if (buckets != null) {
            buckets.announceBefore(announce);
        } else {
            this.announce = announce;
        }
    }

    @Override
    public void scaleAveraged(double factor) {
        try (PointerScope temporaries = new PointerScope()) {
            for (Partition p : partitions) {
                p.shardGrad.mul_(new Scalar(factor));
            }
        }
    }

    @Override
    public boolean averagedFinite() {
        for (Partition p : partitions) {
            if (!LossScaler.finite(p.shardGrad)) {
                return false;
            }
        }
        return true;
    }

    private void reduceScatterGradients() {
        if (announce != null && group.size() > 1) {
            announce.run();
        }
        List<Work> works = new ArrayList<>();
        for (Partition p : partitions) {
            for (int i = 0; i < p.params.size(); i++) {
                p.grads.pack(i, p.params.get(i).grad());
            }
            if (group.size() == 1) {
                p.shardGrad.copy_(p.grads.flat); // one rank's gradients are the average
                works.add(null);
            } else if (p.wire == null) {
                works.add(group.reduceScatter(p.grads.buffer, p.shardGradData, ReduceOp.AVG));
            } else {
                p.wire.takeShare(p.grads.flat, group.size());
                works.add(group.reduceScatter(p.wire.buffer, p.wireReduced.buffer, ReduceOp.SUM));
            }
        }
        for (int k = 0; k < partitions.size(); k++) {
            Partition p = partitions.get(k);
            if (works.get(k) == null) {
                continue;
            }
            works.get(k).await();
            if (p.wire != null) {
                p.shardGrad.copy_(p.wireReduced.flat);
            }
        }
    }

    /** Before the optimizer's step: each shard takes this rank's slice of the parameters as they are now. */
    void beforeStep() {
        try (PointerScope temporaries = new PointerScope()) {
            for (Partition p : partitions) {
                p.packParameters();
            }
        }
    }

    /** After the step: every rank's stepped slices into every rank's parameters. */
    void afterStep() {
        long began = System.nanoTime();
        try (PointerScope temporaries = new PointerScope()) {
            List<Work> works = new ArrayList<>();
            for (Partition p : partitions) {
                if (group.size() == 1) {
                    p.gatheredFlat.narrow(0, 0, p.slice).copy_(p.shardPlain);
                } else {
                    works.add(group.allgather(p.shardData, p.gathered));
                }
            }
            for (int k = 0; k < partitions.size(); k++) {
                if (!works.isEmpty()) {
                    works.get(k).await();
                }
                partitions.get(k).unpackParameters();
            }
        } finally {
            waitedNanos += System.nanoTime() - began;
        }
    }

    /**
     * Scales the shards' averaged gradients so that the L2 norm of the whole averaged gradient
     * (every rank's shards: one allreduce of the squared sums) is at most {@code maxNorm}; returns
     * that norm before clipping. The coefficient is {@code clip_grad_norm_}'s, maxNorm / (norm + 1e-6).
     */
    double clipGradNorm(double maxNorm) {
        try (PointerScope temporaries = new PointerScope()) {
            double[] squares = {0};
            for (Partition p : partitions) {
                double norm = p.shardGrad.norm().item_double();
                squares[0] += norm * norm;
            }
            group.allreduce(DenseBuffer.of(squares), ReduceOp.SUM).await();
            double total = Math.sqrt(squares[0]);
            double coefficient = maxNorm / (total + 1e-6);
            if (coefficient < 1) {
                for (Partition p : partitions) {
                    p.shardGrad.mul_(new Scalar(coefficient));
                }
            }
            return total;
        }
    }

    @Override
    public void clearGradients() {
        if (buckets != null) {
            buckets.clearGradients();
        }
        try (PointerScope temporaries = new PointerScope()) {
            for (Partition p : partitions) {
                for (Tensor t : p.params) {
                    if (t.grad().defined()) {
                        t.mutable_grad().put(new Tensor());
                    }
                }
            }
        }
    }

    @Override
    public long gradientsSeen() {
        return buckets == null ? 0 : buckets.gradientsSeen();
    }

    @Override
    public void pauseHooks() {
        if (buckets != null) {
            buckets.pauseHooks();
        }
    }

    @Override
    public void resumeHooks() {
        if (buckets != null) {
            buckets.resumeHooks();
        }
    }

    /** Gradient averaging (the buckets' included) and the parameter allgathers. */
    @Override
    public long communicationWaitNanos() {
        return waitedNanos + (buckets == null ? 0 : buckets.communicationWaitNanos());
    }

    /** One optimizer parameter group: its parameters, this rank's shard of them, and the buffers that move them. */
    private final class Partition {
        final FlatLayout layout;
        final List<Tensor> params = new ArrayList<>();
        final DataType type;
        final long slice;
        /** This rank's real elements: [start, start + count) of the flat space. */
        final long start;

        final long count;
        /** The shard: a leaf the optimizer steps, and the same memory outside autograd. */
        final DenseBuffer shardData;

        final Tensor shard;
        final Tensor shardPlain;
        final DenseBuffer shardGradData;
        final Tensor shardGrad;
        /**
         * Every rank's shard after the allgather (slice x ranks elements): the parameters' own
         * storage, each parameter a view into it, so the allgather writes the parameters in place.
         */
        final Tensor gatheredFlat;

        final DenseBuffer gathered;
        final long gatheredAddress;
        /** Stage 2: every parameter's gradient flat (padded to slice x ranks), and 16-bit copies when compressed. */
        FlatBuffer grads;

        FlatBuffer wire;
        FlatBuffer wireReduced;

        Partition(int index, TensorVector groupParams) {
            layout = FlatLayout.of(groupParams);
            DataType found = null;
            for (int i = 0; i < layout.size(); i++) {
                Tensor p = LibTorch.retain(new Tensor(groupParams.get(layout.positions()[i])));
                DataType t = TensorBuffers.checkMovable(
                        p, "parameter " + layout.positions()[i] + " of parameter group " + index);
                if (found != null && t != found) {
                    throw new IllegalArgumentException(
                            "ZeRO lays each parameter group flat, so a group holds one element "
                                    + "type: parameter group " + index + " mixes " + found.label() + " and " + t.label()
                                    + "; put parameters of different types in different groups");
                }
                found = t;
                params.add(p);
            }
            type = found == null ? DataType.FLOAT32 : found;
            if (type != DataType.FLOAT32 && type != DataType.FLOAT64) {
                throw new IllegalArgumentException("ZeRO shards float32 and float64 parameters; parameter group "
                        + index + " holds " + type.label());
            }
            int ranks = group.size();
            slice = layout.slice(ranks);
            OptimizerArchives.Span mine = layout.shardSpan(index, group.rank(), ranks);
            start = mine.start();
            count = mine.count();
            int all = Math.toIntExact(slice * ranks);
            // Storage libtorch owns: the parameters keep it alive for as long as they point into it.
            org.bytedeco.pytorch.TensorOptions options = new org.bytedeco.pytorch.TensorOptions(ScalarTypes.of(type));
            shard = LibTorch.retain(torch.zeros(new long[] {slice}, options).requires_grad_(true));
            shardPlain = LibTorch.retain(shard.detach());
            shardData = TensorBuffers.view(shardPlain);
            shardGrad = LibTorch.retain(torch.zeros(new long[] {slice}, options));
            shardGradData = TensorBuffers.view(shardGrad);
            // empty, not zeros: pages become resident as each parameter is copied in and its old storage freed
            gatheredFlat = LibTorch.retain(torch.empty(
                    new long[] {(long) all},
                    new org.bytedeco.pytorch.DimnameListOptional(),
                    options,
                    new org.bytedeco.pytorch.MemoryFormatOptional()));
            gathered = TensorBuffers.view(gatheredFlat);
            gatheredAddress = gatheredFlat.data_ptr().address();
            for (int i = 0; i < params.size(); i++) {
                gatheredFlat.narrow(0, layout.offsets()[i], layout.count(i)).copy_(flat(i));
                pointIntoGathered(i);
            }
            if (stage == 2) {
                grads = FlatBuffer.allocate(type, all, params); // laid out as the layout's offsets
                if (compression != null && type == DataType.FLOAT32) {
                    wire = FlatBuffer.allocate(compression, all, List.of());
                    wireReduced = FlatBuffer.allocate(compression, slice, List.of());
                }
            }
        }

        /**
         * Parameter {@code i}'s memory as a 1-d tensor outside autograd, made at each use: loading
         * a checkpoint into the model gives its parameters new storage.
         */
        Tensor flat(int i) {
            return params.get(i).detach().view(-1);
        }

        /** Calls {@code copy} for each piece of this rank's slice: (parameter, offset in it, offset in the shard, length). */
        void forEachPiece(PieceAction copy) {
            long end = start + count;
            for (int i = 0; i < params.size(); i++) {
                long from = Math.max(start, layout.offsets()[i]);
                long to = Math.min(end, layout.offsets()[i] + layout.count(i));
                if (from < to) {
                    copy.piece(i, from - layout.offsets()[i], from - start, to - from);
                }
            }
        }

        void packParameters() {
            forEachPiece(
                    (i, inParam, inShard, n) -> shardPlain.narrow(0, inShard, n).copy_(flat(i).narrow(0, inParam, n)));
        }

        /** Stage 1: this rank's slice of the averaged gradients into the shard's gradient (zeros where there is none). */
        void packGradients() {
            shardGrad.zero_();
            forEachPiece((i, inParam, inShard, n) -> {
                Tensor g = params.get(i).grad();
                if (g.defined()) {
                    shardGrad.narrow(0, inShard, n).copy_(g.reshape(-1).narrow(0, inParam, n));
                }
            });
        }

        /**
         * After the allgather, which wrote every parameter that is still a view into the gathered
         * storage: points any other (loading a checkpoint into the model gives its parameters new
         * storage) into it again.
         */
        void unpackParameters() {
            for (int i = 0; i < params.size(); i++) {
                Tensor p = params.get(i);
                if (p.data_ptr().address() != gatheredAddress + layout.offsets()[i] * type.byteSize()) {
                    pointIntoGathered(i);
                }
            }
        }

        /** Parameter {@code i} becomes its view into the gathered storage (its values are those there). */
        void pointIntoGathered(int i) {
            long[] shape = layout.shapes().get(i);
            long[] strides = new long[shape.length];
            long stride = 1;
            for (int d = shape.length - 1; d >= 0; d--) {
                strides[d] = stride;
                stride *= shape[d];
            }
            try (NoGradGuard noGrad = new NoGradGuard()) {
                params.get(i).set_(gatheredFlat, layout.offsets()[i], shape, strides);
            }
        }
    }

    @FunctionalInterface
    private interface PieceAction {
        void piece(int parameter, long inParameter, long inShard, long length);
    }
}
