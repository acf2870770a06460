package dev.cohort.torch;

import org.bytedeco.pytorch.LossClosure;
import org.bytedeco.pytorch.Optimizer;
import org.bytedeco.pytorch.Tensor;

/**
 * An optimizer whose {@link #step()} first averages the gradients across all ranks (in buckets,
 * see {@link GradientBuckets}), then applies the wrapped optimizer's update: Horovod's
 * {@code DistributedOptimizer}, and what DDP's backward hooks achieve.
 *
 * <p>It is the same native optimizer as the one wrapped (state, parameter groups, learning rate,
 * {@code zero_grad}, {@code save}/{@code load} all act on it). Gradient accumulation needs no
 * special scope: gradients of several backward passes accumulate locally and are averaged once,
 * at the step (what DDP's {@code no_sync} and Horovod's {@code backward_passes_per_step} do).
 */
public final class DistributedOptimizer extends Optimizer {

    private final Optimizer local;
    private final GradientBuckets buckets;

    DistributedOptimizer(Optimizer local, GradientBuckets buckets) {
        super(local);
        this.local = local;
        this.buckets = buckets;
    }

    /** Averages gradients across ranks, then steps. */
    @Override
    public Tensor step() {
        buckets.averageGradients();
        return local.step();
    }

    /** Closures re-evaluate the loss several times per step, which would need as many allreduces: not supported. */
    @Override
    public Tensor step(LossClosure closure) {
        throw new UnsupportedOperationException("DistributedOptimizer does not support step(closure) "
                + "(LBFGS-style optimizers); call backward() then step()");
    }

    /** The wrapped optimizer (steps without averaging). */
    public Optimizer local() {
        return local;
    }

    /** The number of gradient buckets (for diagnostics). */
    public int bucketCount() {
        return buckets.bucketCount();
    }
}
