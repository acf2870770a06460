package dev.cohort.torch;

import dev.cohort.libtorch.LibTorch;
import org.bytedeco.pytorch.LossClosure;
import org.bytedeco.pytorch.Optimizer;
import org.bytedeco.pytorch.Tensor;

/**
 * An optimizer whose {@link #step()} first averages the gradients across all ranks (in buckets,
 * see {@link GradientBuckets}), then applies the wrapped optimizer's update: Horovod's
 * {@code DistributedOptimizer}, and what DDP's backward hooks achieve.
 *
 * <p>Communication overlaps the backward pass: each bucket's allreduce starts as soon as backward
 * has produced its gradients; {@code step()} waits for the rest. It is the same native optimizer as
 * the one wrapped (state, parameter groups, learning rate, {@code save}/{@code load} all act on
 * it).
 *
 * <p>After a step each parameter's {@code .grad} is a view into its gradient bucket (DDP's
 * {@code gradient_as_bucket_view}): read it until the next {@link #zero_grad()}, which always
 * sets gradients to none (as libtorch's default does), so that the next backward's gradients
 * reach their buckets while backward still runs.
 *
 * <p>Gradient accumulation: run the backward passes that are not followed by a step inside
 * {@link #noSync()} (DDP's {@code no_sync}, Horovod's {@code backward_passes_per_step}); their
 * gradients accumulate locally and are averaged once, at the step. Without the scope the result is
 * the same, but the early passes' communication is wasted.
 */
public final class DistributedOptimizer extends Optimizer {

    private final Optimizer local;
    private final GradientBuckets buckets;

    DistributedOptimizer(Optimizer local, GradientBuckets buckets) {
        super(local);
        this.local = LibTorch.retain(local);   // the wrapper uses it for as long as it lives
        this.buckets = buckets;
    }

    /** Averages gradients across ranks, then steps. */
    @Override
    public Tensor step() {
        buckets.averageGradients();
        return local.step();
    }

    /** Sets every gradient to none, whatever {@code setToNone} says (see the class comment). */
    @Override
    public void zero_grad(boolean setToNone) {
        zero_grad();
    }

    /**
     * Sets every gradient to none. (libtorch's own {@code zero_grad} detaches gradients in place,
     * which views refuse: call this one, or the module's.)
     */
    @Override
    public void zero_grad() {
        buckets.clearGradients();
        local.zero_grad(true);
    }

    /** Closures re-evaluate the loss several times per step, which would need as many allreduces: not supported. */
    @Override
    public Tensor step(LossClosure closure) {
        throw new UnsupportedOperationException("DistributedOptimizer does not support step(closure) "
                + "(LBFGS-style optimizers); call backward() then step()");
    }

    /** A scope whose backward passes start no communication; close it before the last backward of the step. */
    public NoSync noSync() {
        buckets.pauseHooks();
        return new NoSync(buckets);
    }

    /** The scope returned by {@link #noSync()}; closing it twice is harmless. */
    public static final class NoSync implements AutoCloseable {
        private GradientBuckets buckets;

        private NoSync(GradientBuckets buckets) {
            this.buckets = buckets;
        }

        @Override
        public void close() {
            if (buckets != null) {
                buckets.resumeHooks();
                buckets = null;
            }
        }
    }

    /** The gradient buckets (for tests in this package). */
    GradientBuckets buckets() {
        return buckets;
    }

    /** The wrapped optimizer (steps without averaging). */
    public Optimizer local() {
        return local;
    }

    /** The number of gradient buckets (for diagnostics). */
    public int bucketCount() {
        return buckets.bucketCount();
    }

    /**
     * How many buckets live in memory the engine reduces in place, copying nothing in or out (the
     * shm engine's arena; for diagnostics).
     */
    public int bucketsInSharedMemory() {
        return buckets.sharedBucketCount();
    }

    /**
     * How long the training thread has been held by gradient communication so far, in
     * nanoseconds: starting bucket allreduces during backward and waiting for them at the step.
     * Communication hidden behind backward is not in it; divided by the training time, it is the
     * share of a step that communication costs.
     */
    public long communicationWaitNanos() {
        return buckets.communicationWaitNanos();
    }

    /** How many bucket allreduces started during backward so far (for diagnostics: overlap at work). */
    public long bucketsStartedDuringBackward() {
        return buckets.startedDuringBackward();
    }
}
