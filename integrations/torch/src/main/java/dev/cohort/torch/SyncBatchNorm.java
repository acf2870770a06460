package dev.cohort.torch;

import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.libtorch.LibTorch;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorBase;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.TensorTensorHook;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;

/**
 * Batch normalization over the whole global batch (PyTorch's {@code SyncBatchNorm}): in training
 * each rank normalizes its shard with the mean and variance of every rank's shard together, so N
 * ranks compute what one process computes on the whole batch; use it in place of
 * {@code BatchNorm1d/2d/3d} where shards are small. Inputs are {@code [N, C, ...]}.
 *
 * <p>The per-channel sums, sums of squares and counts are added up across ranks with one float64
 * allreduce in the forward pass; a gradient hook adds up their gradients across ranks in the
 * backward pass (one more allreduce), so each rank's input gradient accounts for its examples'
 * part in every rank's statistics. Running mean and (unbiased) variance follow the global
 * statistics, as BatchNorm's do, with the same {@code momentum} and {@code eps}; in evaluation mode
 * they normalize, with no communication.
 *
 * <p>Every rank of {@code group} must run each forward and backward pass through the layer (the
 * allreduces are collectives). Parameters {@code weight} and {@code bias}, buffers
 * {@code running_mean}, {@code running_var} and {@code num_batches_tracked}, as BatchNorm's.
 */
public final class SyncBatchNorm extends Module {

    private final ProcessGroup group;
    private final long features;
    private final double eps;
    private final double momentum;
    private final Tensor weight;
    private final Tensor bias;
    private final Tensor runningMean;
    private final Tensor runningVar;
    private final Tensor batchesTracked;
    private final TensorTensorHook sumAcrossRanks;
    /** The last gradient the hook returned: native code copies it after the call returns. */
    private Tensor returned;

    /** With BatchNorm's defaults: {@code eps} 1e-5, {@code momentum} 0.1. */
    public SyncBatchNorm(ProcessGroup group, long features) {
        this(group, features, 1e-5, 0.1);
    }

    /**
     * @throws IllegalArgumentException for fewer than one feature, a negative {@code eps} or a
     *                                  {@code momentum} outside [0, 1]
     */
    public SyncBatchNorm(ProcessGroup group, long features, double eps, double momentum) {
        if (features < 1) {
            throw new IllegalArgumentException("features must be >= 1, got " + features);
        }
        if (!(eps >= 0) || !(momentum >= 0 && momentum <= 1)) {
            throw new IllegalArgumentException(
                    "eps must be >= 0 and momentum in [0, 1], got eps " + eps + " and momentum " + momentum);
        }
        this.group = group;
        this.features = features;
        this.eps = eps;
        this.momentum = momentum;
        // Owning handles: what register_* returns refers into the module's table, which moves as it grows.
        this.weight = LibTorch.retain(new Tensor(register_parameter("weight", torch.ones(features))));
        this.bias = LibTorch.retain(new Tensor(register_parameter("bias", torch.zeros(features))));
        this.runningMean = LibTorch.retain(new Tensor(register_buffer("running_mean", torch.zeros(features))));
        this.runningVar = LibTorch.retain(new Tensor(register_buffer("running_var", torch.ones(features))));
        this.batchesTracked = LibTorch.retain(new Tensor(register_buffer(
                "num_batches_tracked", torch.zeros(new long[0], new TensorOptions(torch.ScalarType.Long)))));
        this.sumAcrossRanks = LibTorch.retain(new SumAcrossRanks());
    }

    /**
     * Normalizes {@code x} ({@code [N, C, ...]} with C the layer's features).
     *
     * @throws IllegalArgumentException for an input of another shape
     */
    public Tensor forward(Tensor x) {
        if (x.dim() < 2 || x.size(1) != features) {
            throw new IllegalArgumentException("SyncBatchNorm of " + features + " features expects an input of shape "
                    + "[N, " + features + ", ...], got "
                    + java.util.Arrays.toString(x.sizes().vec().get()));
        }
        long[] shape = new long[(int) x.dim()];
        java.util.Arrays.fill(shape, 1);
        shape[1] = features;
        if (!is_training()) {
            return normalize(x, runningMean, runningVar.add(new Scalar(eps)).rsqrt(), shape);
        }
        long[] dims = new long[(int) x.dim() - 1];
        dims[0] = 0;
        for (int d = 2; d < x.dim(); d++) {
            dims[d - 1] = d;
        }
        Tensor wide = x.to(torch.ScalarType.Double);
        TensorVector parts = new TensorVector();
        parts.push_back(wide.sum(dims));
        parts.push_back(wide.mul(wide).sum(dims));
        parts.push_back(torch.ones(new long[] {1}, new TensorOptions(torch.ScalarType.Double))
                .mul(new Scalar((double) (x.numel() / features))));
        Tensor local = torch.cat(parts);
        Tensor global = local;
        if (group.size() > 1) {
            Tensor total = local.detach().clone();
            group.allreduce(TensorBuffers.view(total), ReduceOp.SUM).await();
            global = local.add(total.sub(local.detach())); // the total's value, local's gradient path
            global.register_hook(sumAcrossRanks);
        }
        Tensor count = global.narrow(0, 2 * features, 1);
        double n = count.item_double();
        if (n < 2) {
            throw new IllegalArgumentException("SyncBatchNorm needs more than one value per channel in training, "
                    + "got " + (long) n + " across all ranks");
        }
        Tensor mean = global.narrow(0, 0, features).div(count);
        Tensor var = global.narrow(0, features, features).div(count).sub(mean.mul(mean));
        torch.ScalarType type = x.scalar_type();
        Tensor y = normalize(x, mean.to(type), var.add(new Scalar(eps)).rsqrt().to(type), shape);
        runningMean.mul_(new Scalar(1 - momentum)).add_(mean.detach().to(type).mul(new Scalar(momentum)));
        runningVar
                .mul_(new Scalar(1 - momentum))
                .add_(var.detach().mul(new Scalar(n / (n - 1) * momentum)).to(type));
        batchesTracked.add_(new Scalar(1L));
        return y;
    }

    private Tensor normalize(Tensor x, Tensor mean, Tensor invStd, long[] shape) {
        return x.sub(mean.view(shape))
                .mul(invStd.view(shape))
                .mul(weight.view(shape))
                .add(bias.view(shape));
    }

    /** Replaces the gradient of the global statistics by its sum over every rank. */
    private final class SumAcrossRanks extends TensorTensorHook {
        @Override
        public TensorBase call(TensorBase grad) {
            Tensor summed = new Tensor(grad).contiguous().clone();
            group.allreduce(TensorBuffers.view(summed), ReduceOp.SUM).await();
            returned = summed;
            return summed;
        }
    }
}
