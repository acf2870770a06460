package dev.cohort.torch;

import dev.cohort.api.Join;
import dev.cohort.api.steps.TrainingSteps;
import dev.cohort.libtorch.LibTorch;
import org.bytedeco.pytorch.LossClosure;
import org.bytedeco.pytorch.Optimizer;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;

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
 *
 * <p>Clipping (Horovod's {@code synchronize()}): {@link #synchronize()} averages the gradients
 * without stepping, so the averaged gradients can be read or changed before {@link #step()},
 * which then steps without averaging again; {@link #clipGradNorm(double)} does both for the usual
 * case. Call it after the last backward of the step: a backward between it and the step is refused
 * at the step where the optimizer can see it (with overlap; without, the step would not notice).
 *
 * <p>Buffers: when built from a model, each step ends by copying the root's module buffers
 * (BatchNorm's running statistics) into every rank's, as DDP's {@code broadcast_buffers} does;
 * option {@value TorchDistributor#BROADCAST_BUFFERS} turns it off.
 *
 * <p>Mixed precision (option {@value TorchDistributor#PRECISION}): run the forward pass and the
 * loss inside {@link #autocast()}, and call backward on {@link #scaleLoss}; both do nothing at
 * float32, so one loop serves every precision:
 *
 * <pre>{@code
 * optimizer.zero_grad();
 * Tensor loss;
 * try (Autocast scope = optimizer.autocast()) {
 *     loss = torch.cross_entropy(model.forward(x), y);
 * }
 * optimizer.scaleLoss(loss).backward();
 * optimizer.step(); // at fp16: skipped on every rank when some rank's gradients overflowed
 * }</pre>
 */
public final class DistributedOptimizer extends Optimizer implements Join.Participant {

    /** What a {@link Join} scope announces: the averaging, a clip of the averaged gradients (argument: maxNorm's bits), the step. */
    private static final int AVERAGE = 1;

    private static final int CLIP = 2;
    private static final int STEP = 3;

    private final Optimizer local;
    private final GradientAverager gradients;
    /** The gradient buckets, or null when ZeRO stage 2 averages the gradients. */
    private final GradientBuckets buckets;
    /** This rank's shards under ZeRO, or null without it. */
    private final ZeroShards zero;
    /** The module's buffers, copied from the root after each step; null when there are none to copy. */
    private final BufferBroadcast buffers;
    /** Fails backward after a step that bypassed this optimizer; null on one rank. */
    private final BypassGuard bypass;
    /** Compares the ranks' parameters after some steps; null on one rank. */
    private final DivergenceWatch divergence;
    /** Gradients seen by the hooks when {@link #synchronize()} averaged; -1 when the gradients are not averaged. */
    private long synchronizedAt = -1;
    /** The open join scope, or null. */
    private Join join;
    /** Inside a join scope: how many ranks train in the averaging under way, once announced; else -1. */
    private int activeRanks = -1;

    private final Precision precision;
    /** The loss scale at {@link Precision#FP16}, else null. */
    private final LossScaler scaler;

    /**
     * @param buckets the gradient buckets (also under ZeRO stage 1), or null at ZeRO stage 2
     * @param zero    the shards under ZeRO stage 1 or 2, else null
     * @param scaler  the loss scale, at {@link Precision#FP16} only
     */
    DistributedOptimizer(
            Optimizer local,
            GradientBuckets buckets,
            ZeroShards zero,
            BufferBroadcast buffers,
            BypassGuard bypass,
            DivergenceWatch divergence,
            Precision precision,
            LossScaler scaler) {
        super(local);
        this.precision = precision;
        this.scaler = scaler;
        this.bypass = bypass;
        this.divergence = divergence;
        this.local = LibTorch.retain(local); // the wrapper uses it for as long as it lives
        this.gradients = zero != null ? zero : buckets;
        this.buckets = buckets;
        this.zero = zero;
        this.buffers = buffers;
    }

    /**
     * Averages gradients across ranks (unless {@link #synchronize()} already did, since the last
     * backward), then steps; then copies the root's module buffers to every rank.
     *
     * @throws IllegalStateException if a backward pass ran after {@link #synchronize()}
     */
    @Override
    public Tensor step() {
        if (synchronizedAt < 0) {
            TrainingSteps.Timing averaging = TrainingSteps.begin(TrainingSteps.Part.AVERAGE);
            average();
            averaging.end();
        } else if (gradients.gradientsSeen() != synchronizedAt) {
            synchronizedAt = -1;
            throw new IllegalStateException("backward ran after synchronize() and before step(): its gradients "
                    + "were not averaged; call synchronize() (or clipGradNorm) after the last backward of the step");
        }
        synchronizedAt = -1;
        if (join != null) {
            join.announce(this, STEP, 0);
        }
        TrainingSteps.Timing stepping = TrainingSteps.begin(TrainingSteps.Part.OPTIMIZER);
        Tensor result = stepAveraged();
        stepping.end();
        TrainingSteps.stepEnded(gradients.group().rank());
        if (divergence != null && join == null) {
            divergence.afterStep(); // not inside a join scope: ranks that joined could not answer it
        }
        return result;
    }

    /** Averages the gradients; inside a join scope over the ranks still training. */
    private void average() {
        if (bypass != null) {
            bypass.averaged();
        }
        gradients.averageGradients();
        int active = activeRanks;
        activeRanks = -1;
        int size = gradients.group().size();
        if (active > 0 && active < size) {
            gradients.scaleAveraged((double) size / active); // the average counted zeros from the ranks that joined
        }
        if (scaler != null) {
            scaler.unscale(gradients);
        }
    }

    /**
     * The local step on the averaged gradients, then ZeRO's gathering and the buffers; at fp16 no
     * step when the gradients overflowed on some rank (on every rank alike).
     */
    private Tensor stepAveraged() {
        Tensor result = null;
        if (scaler == null || !scaler.overflowed()) {
            if (zero != null) {
                zero.beforeStep();
            }
            result = local.step();
            if (zero != null) {
                zero.afterStep();
            }
        }
        if (scaler != null) {
            scaler.update();
        }
        if (buffers != null) {
            buffers.fromRoot();
        }
        return result == null ? new Tensor() : result;
    }

    /** The precision forward and backward compute in (option {@value TorchDistributor#PRECISION}). */
    public Precision precision() {
        return precision;
    }

    /**
     * Opens libtorch's CPU autocast in this optimizer's {@link #precision()} on the calling thread:
     * run the forward pass and the loss inside, backward after closing it. At float32 the scope
     * changes nothing.
     */
    public Autocast autocast() {
        return Autocast.open(precision);
    }

    /**
     * The tensor to call backward on: at fp16 the loss times the current loss scale (the step
     * divides the averaged gradients by it again), at any other precision {@code loss} itself.
     */
    public Tensor scaleLoss(Tensor loss) {
        return scaler == null ? loss : scaler.scaled(loss);
    }

    /** The current loss scale at fp16; 1 at the other precisions. */
    public double lossScale() {
        return scaler == null ? 1 : scaler.scale();
    }

    /** How many steps were skipped so far because some rank's fp16 gradients overflowed (0 at the other precisions). */
    public long skippedSteps() {
        return scaler == null ? 0 : scaler.skippedSteps();
    }

    /**
     * Averages the gradients across ranks now, without stepping: afterwards each parameter's
     * {@code .grad} holds the average, to read, clip or scale; the next {@link #step()} applies it
     * without averaging again. Calling it twice before a step averages once.
     */
    public void synchronize() {
        if (synchronizedAt >= 0) {
            return;
        }
        average();
        synchronizedAt = gradients.gradientsSeen();
    }

    /**
     * Averages the gradients ({@link #synchronize()}) and scales them so that their global L2
     * norm, over every parameter of the optimizer, is at most {@code maxNorm} (PyTorch's
     * {@code clip_grad_norm_} over the averaged gradients). Every rank holds the same averaged
     * gradients, so every rank computes the same norm and clips the same way.
     *
     * @return the norm of the averaged gradients before clipping
     * @throws IllegalArgumentException unless {@code maxNorm} is positive and finite
     */
    public double clipGradNorm(double maxNorm) {
        if (!(maxNorm > 0) || Double.isInfinite(maxNorm)) {
            throw new IllegalArgumentException("maxNorm must be positive and finite, got " + maxNorm);
        }
        synchronize();
        if (join != null) {
            join.announce(this, CLIP, Double.doubleToLongBits(maxNorm));
        }
        return clipAveraged(maxNorm);
    }

    private double clipAveraged(double maxNorm) {
        if (zero != null) {
            return zero.clipGradNorm(maxNorm); // each rank holds its own shard of the averaged gradients
        }
        TensorVector all = ModelParameters.ofOptimizer(local);
        TensorVector withGradients = new TensorVector();
        for (long i = 0; i < all.size(); i++) {
            if (all.get(i).grad().defined()) {
                withGradients.push_back(all.get(i));
            }
        }
        if (withGradients.size() == 0) {
            return 0;
        }
        return torch.clip_grad_norm_(withGradients, maxNorm, 2.0, false);
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
        synchronizedAt = -1;
        gradients.clearGradients();
        local.zero_grad(true);
    }

    /**
     * Inside a {@link Join} scope ({@code backend.join(optimizer)}) each averaging, clip and step
     * is announced first, and averages count only the ranks still training.
     *
     * @throws IllegalStateException if this optimizer is in another open scope
     */
    @Override
    public void enter(Join join) {
        if (this.join != null) {
            throw new IllegalStateException("this DistributedOptimizer is in another open join scope");
        }
        this.join = join;
        gradients.announceBefore(() -> {
            if (!join.joined()) {
                activeRanks = join.announce(this, AVERAGE, 0);
            }
        });
    }

    /**
     * On a rank that joined: averages zero gradients (counted out: scaled to the ranks still
     * training), clips or steps as the others announced, so every rank keeps the same model.
     */
    @Override
    public void shadow(int phase, long argument, int activeRanks) {
        switch (phase) {
            case AVERAGE -> {
                zero_grad();
                this.activeRanks = activeRanks;
                average();
            }
            case CLIP -> clipAveraged(Double.longBitsToDouble(argument));
            case STEP -> stepAveraged();
            default ->
                throw new IllegalStateException("a rank announced phase " + phase
                        + " of a DistributedOptimizer, which has none such (ranks running different Cohort versions?)");
        }
    }

    @Override
    public void leave() {
        gradients.announceBefore(null);
        join = null;
        activeRanks = -1;
    }

    /** Closures re-evaluate the loss several times per step, which would need as many allreduces: not supported. */
    @Override
    public Tensor step(LossClosure closure) {
        throw new UnsupportedOperationException("DistributedOptimizer does not support step(closure) "
                + "(LBFGS-style optimizers); call backward() then step()");
    }

    /** A scope whose backward passes start no communication; close it before the last backward of the step. */
    public NoSync noSync() {
        gradients.pauseHooks();
        if (bypass != null) {
            bypass.pause();
        }
        return new NoSync(gradients, bypass);
    }

    /** The scope returned by {@link #noSync()}; closing it twice is harmless. */
    public static final class NoSync implements AutoCloseable {
        private GradientAverager buckets;
        private final BypassGuard bypass;

        private NoSync(GradientAverager buckets, BypassGuard bypass) {
            this.buckets = buckets;
            this.bypass = bypass;
        }

        @Override
        public void close() {
            if (buckets != null) {
                buckets.resumeHooks();
                if (bypass != null) {
                    bypass.resume();
                }
                buckets = null;
            }
        }
    }

    /** The gradient buckets (for tests in this package); null at ZeRO stage 2. */
    GradientBuckets buckets() {
        return buckets;
    }

    /**
     * Lets go of the group, for an elastic job whose group is re-formed (call it before the old
     * backend closes): the gradient hooks stop for good, gradients kept in the buckets move to
     * memory of their own, and the buckets are freed. The model and the local optimizer stay as
     * they are: distribute them again on the new backend, which takes the root's state. Under
     * ZeRO a lost rank's shard of the optimizer state is gone, so this refuses.
     *
     * @throws IllegalStateException under ZeRO
     */
    public void release() {
        if (zero != null) {
            throw new IllegalStateException(
                    "ZeRO stage " + zero.stage() + " shards the optimizer state across the ranks: "
                            + "a lost rank's shard is gone, so the group cannot go on without it; elastic runs train with "
                            + "zeroStage 0");
        }
        if (buckets != null) {
            buckets.retire();
        }
        if (bypass != null) {
            bypass.retire();
        }
    }

    /** The wrapped optimizer (steps without averaging). */
    public Optimizer local() {
        return local;
    }

    /** The number of gradient buckets (for diagnostics). */
    public int bucketCount() {
        return buckets == null ? 0 : buckets.bucketCount();
    }

    /**
     * How many buckets live in memory the engine reduces in place, copying nothing in or out (the
     * shm engine's arena; for diagnostics).
     */
    public int bucketsInSharedMemory() {
        return buckets == null ? 0 : buckets.sharedBucketCount();
    }

    /**
     * How long the training thread has been held by gradient communication so far, in
     * nanoseconds: starting bucket allreduces during backward and waiting for them at the step.
     * Communication hidden behind backward is not in it; divided by the training time, it is the
     * share of a step that communication costs.
     */
    public long communicationWaitNanos() {
        return gradients.communicationWaitNanos();
    }

    /** How many bucket allreduces started during backward so far (for diagnostics: overlap at work). */
    public long bucketsStartedDuringBackward() {
        return buckets == null ? 0 : buckets.startedDuringBackward();
    }

    /** The ZeRO stage: 0 (every rank holds the whole optimizer state), 1 or 2. */
    public int zeroStage() {
        return zero == null ? 0 : zero.stage();
    }

    /** The loss scale at fp16, else null (for checkpoints). */
    LossScaler scaler() {
        return scaler;
    }

    /** The shards under ZeRO, else null (for checkpoints). */
    ZeroShards shards() {
        return zero;
    }

    /**
     * The bytes of optimizer state this rank holds (momentum buffers, Adam's moments, step
     * counts), read from the optimizer's own serialization: under ZeRO about 1/N of the state of
     * unsharded training. Costs a serialization; for diagnostics.
     */
    public long optimizerStateBytes() {
        return OptimizerArchives.stateBytes(local);
    }
}
