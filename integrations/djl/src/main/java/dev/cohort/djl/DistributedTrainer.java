package dev.cohort.djl;

import ai.djl.Model;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.GradientCollector;
import ai.djl.training.Trainer;
import ai.djl.training.TrainingConfig;
import ai.djl.training.dataset.Batch;
import ai.djl.training.dataset.Dataset;
import ai.djl.training.evaluator.Evaluator;
import ai.djl.training.initializer.Initializer;
import ai.djl.training.listener.LoggingTrainingListener;
import ai.djl.training.listener.MemoryTrainingListener;
import ai.djl.training.listener.SaveModelTrainingListener;
import ai.djl.training.listener.TimeMeasureTrainingListener;
import ai.djl.training.listener.TrainingListener;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.translate.TranslateException;
import ai.djl.util.Pair;
import ai.djl.util.PairList;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.DivergenceCheck;
import dev.cohort.api.Join;
import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.HalfFloats;
import dev.cohort.api.collective.ObjectCollectives;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.api.collective.Work;
import dev.cohort.api.steps.TrainingSteps;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.ShortBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.function.Predicate;

/**
 * A DJL {@link Trainer} whose every {@link #step()} first averages the gradients across the
 * backend's ranks: DJL's own training loop ({@code EasyTrain.fit}) and hand-written loops
 * ({@code collector.backward(loss); trainer.step();}) both distribute unchanged. Make it where
 * {@code model.newTrainer(config)} was:
 *
 * <pre>{@code
 * try (Trainer trainer = DistributedTrainer.of(backend, model, config)) { ... }
 * }</pre>
 *
 * <p>Why a trainer: DJL updates parameters one by one through its parameter server, in the order
 * of a hash map of random parameter ids, which differs from rank to rank; the trainer's step is the
 * one place that sees every gradient at once, in the block's own order, which is the same
 * everywhere.
 *
 * <ul>
 * <li><b>Same start.</b> Every rank takes the root's parameters when the model is initialized
 *     ({@link #initialize}) or, for a model already initialized (loaded), at once.
 * <li><b>Fused averaging.</b> At each step the gradients are packed, in block order, into buckets
 *     of at most {@code bucketBytes} (one per element type), one allreduce per bucket, all started
 *     before the first is awaited, and unpacked into the gradients. DJL has no hook that fires as
 *     backward produces each gradient, so communication runs at the step, not during backward.
 * <li><b>Accumulation.</b> With {@code accumulation} k > 1, k − 1 steps out of k only let DJL keep
 *     adding the gradients (its PyTorch engine accumulates until the optimizer zeroes them); the
 *     k-th averages across ranks and divides by k, so the update equals one on the k batches of
 *     every rank together.
 * <li><b>16-bit gradients on the wire.</b> With {@link Options#gradCompression} {@code bf16} or
 *     {@code fp16} float32 gradients travel as 16-bit floats (half the bytes), reduced in float32
 *     and rounded (PyTorch's {@code bf16_compress_hook}/{@code fp16_compress_hook}).
 * <li><b>Clipping.</b> {@link #clipGradNorm} (before a step), or {@link Options#clipGradNorm} (at
 *     every step, for {@code EasyTrain.fit}), scales the averaged gradients so that their global
 *     L2 norm is at most the given one, as PyTorch's {@code clip_grad_norm_} after averaging: every
 *     rank holds the same averaged gradients, so every rank clips alike, without communicating.
 * <li><b>Host memory.</b> A parameter on another device than the CPU (a GPU) is refused with its
 *     name and device: Cohort reduces host memory, and a GPU array's gradient read through DJL
 *     would be a copy, its averaged values lost.
 * <li><b>ZeRO stages 1 and 2.</b> With {@link Options#zeroStage} 1 each rank owns a contiguous
 *     share of the trainable parameters (in block order, balanced by size) and its optimizer
 *     updates, and keeps state for, those alone; after the update each owner broadcasts its
 *     parameters. At stage 2 the gradients are not allreduced but reduced to their owner, bucket by
 *     bucket (buckets end where owners change): each rank receives the average of its share only;
 *     the others' gradients stay as this rank's backward left them, and are not applied.
 * <li><b>Statistics in step.</b> After every update the parameters that take no gradient (a
 *     {@code BatchNorm}'s running mean and variance) are averaged across the ranks, in one small
 *     allreduce: each rank's statistics come from its own batches, and averaging keeps them the
 *     same everywhere (as the divergence check requires) while using every rank's data, where
 *     DDP's default broadcast of the root's would use one rank's. Forward still normalizes by each
 *     rank's own batch (no SyncBatchNorm).
 * <li><b>Uneven inputs.</b> Inside {@code backend.join(trainer)} ({@link Join}) a rank that runs
 *     out of batches closes its scope and repeats the others' averaging, clipping and update with
 *     zero gradients, averages counting only the ranks still training, so that every rank ends
 *     with the model of training on the batches that exist. The divergence check pauses inside a
 *     scope (its collective is not announced).
 * <li><b>Quiet workers.</b> On ranks other than the root, the listeners that log, save models,
 *     measure time or memory are left out; the others (epochs, evaluators, divergence checks) run
 *     everywhere, since training needs them.
 * <li><b>Divergence check.</b> At the steps {@link DivergenceCheck} says are due (the first, then
 *     every 100th; {@code COHORT_DIVERGENCE_CHECK} sets the interval, 0 turns it off) the ranks
 *     compare one fingerprint per parameter, and a rank whose model differs makes every rank throw
 *     {@link DivergenceCheck.ModelsDivergedException} naming the parameter and the step.
 * <li><b>Sharded data.</b> A {@link DistributedParquetDataset} it iterates gives each rank its
 *     share of every epoch, read errors agreed on across the ranks; its loader is closed with the
 *     trainer.
 * </ul>
 * Gradients that a step did not produce (parameters unused by the batch) count as zeros.
 */
public final class DistributedTrainer extends Trainer implements Join.Participant {

    /** DDP's bucket size. */
    public static final long DEFAULT_BUCKET_BYTES = 25L << 20;

    private DistributedBackend backend;
    private final Optimizer optimizer;
    private final int accumulation;
    private final long bucketBytes;
    /** The 16-bit type float32 gradients travel as; null: as they are. */
    private final DataType wire;
    /** The norm every step clips the averaged gradients to; 0: none. */
    private final double clipEveryStep;
    /** Whether {@link #synchronize()} averaged this step's gradients already. */
    private boolean averaged;
    /** ZeRO stages 1 and 2: what DJL updates the parameters through; null: the user's optimizer, every parameter. */
    private final OwnedUpdates sharded;
    /** ZeRO stage 2: gradients reduced to their owners, not allreduced. */
    private final boolean shardsGradients;
    /** ZeRO: the owner of each trainable parameter, in block order; null until laid out. */
    private int[] owners;

    private Set<String> ownedIds = Set.of();
    /** The join scope this trainer takes part in, while one is open. */
    private Join join;
    /** Inside a join scope: how many ranks the last update's announcement counted. */
    private int updatingRanks;
    /** The parameters that take no gradient (running statistics), averaged after each update; null until laid out. */
    private List<Bucket> statistics;

    /** What a {@link Join} scope announces: the averaging (argument: the clip's bits, 0 for none), a clip, the update. */
    private static final int AVERAGE = 1;

    private static final int CLIP = 2;
    private static final int UPDATE = 3;

    private List<Bucket> buckets;
    private DivergenceCheck divergenceCheck;
    private int microBatches;
    /** Parameter updates this trainer made, counted from 1 by {@link #step()}. */
    private long updates;

    private long communicationNanos;
    /** The Parquet datasets this trainer iterated, whose loaders {@link #close()} closes. */
    private final Set<DistributedParquetDataset> parquetDatasets = Collections.newSetFromMap(new IdentityHashMap<>());

    private DistributedTrainer(DistributedBackend backend, Model model, TrainingConfig config, Options options) {
        this(backend, model, config, options, options.zeroStage > 0 ? new OwnedUpdates(config.getOptimizer()) : null);
    }

    private DistributedTrainer(
            DistributedBackend backend, Model model, TrainingConfig config, Options options, OwnedUpdates sharded) {
        super(
                prepare(model, config),
                quietOnWorkers(config, backend.isRootWorker(), sharded != null ? sharded : config.getOptimizer()));
        this.sharded = sharded;
        this.shardsGradients = options.zeroStage == 2;
        this.backend = backend;
        this.optimizer = config.getOptimizer();
        this.accumulation = options.accumulation;
        this.bucketBytes = options.bucketBytes;
        this.wire = options.wire;
        this.clipEveryStep = options.clipGradNorm;
        this.divergenceCheck = DivergenceCheck.fromEnvironment(backend.group());
        if (model.getBlock().isInitialized()) {
            broadcastParameters();
        }
    }

    /** A trainer of {@code model} averaging every step's gradients across {@code backend}'s ranks. */
    public static DistributedTrainer of(DistributedBackend backend, Model model, TrainingConfig config) {
        return of(backend, model, config, new Options());
    }

    /** How a {@link DistributedTrainer} averages; each setting beside its default, which is DDP's. */
    public static final class Options {
        private int accumulation = 1;
        private long bucketBytes = DEFAULT_BUCKET_BYTES;
        private DataType wire;
        private double clipGradNorm;
        private int zeroStage;

        /** Average every {@code steps}-th step; the others accumulate (default 1: every step). */
        public Options accumulation(int steps) {
            this.accumulation = (int) atLeastOne("accumulation", steps, " step");
            return this;
        }

        /** Gradients travel in buckets of at most {@code bytes} (default {@value #DEFAULT_BUCKET_BYTES}). */
        public Options bucketBytes(long bytes) {
            this.bucketBytes = atLeastOne("bucketBytes", bytes, "");
            return this;
        }

        private static long atLeastOne(String name, long value, String unit) {
            if (value < 1) {
                throw new IllegalArgumentException(name + " must be >= 1" + unit + ", got " + value);
            }
            return value;
        }

        /** {@code "bf16"} or {@code "fp16"}: float32 gradients travel as 16-bit floats; {@code "none"} (the default): as they are. */
        public Options gradCompression(String format) {
            this.wire = switch (Objects.requireNonNull(format, "format").trim().toLowerCase(java.util.Locale.ROOT)) {
                case "bf16", "bfloat16" -> DataType.BFLOAT16;
                case "fp16", "float16" -> DataType.FLOAT16;
                case "none" -> null;
                default ->
                    throw new IllegalArgumentException(
                            "gradCompression must be bf16, fp16 or none, got '" + format + "'");
            };
            return this;
        }

        /**
         * DeepSpeed's ZeRO stage: 0 (the default); 1, each rank keeping the optimizer state of its
         * share of the parameters only; 2, each rank also receiving the averaged gradients of its
         * share only.
         *
         * @throws IllegalArgumentException for another stage (3, which shards the parameters, is
         *     not there for DJL)
         */
        public Options zeroStage(int stage) {
            if (stage < 0 || stage > 2) {
                throw new IllegalArgumentException("zeroStage must be 0, 1 or 2 for DJL's trainer, got " + stage);
            }
            this.zeroStage = stage;
            return this;
        }

        /** Every step clips the averaged gradients' global L2 norm to {@code maxNorm} (default: no clipping). */
        public Options clipGradNorm(double maxNorm) {
            this.clipGradNorm = requireNorm(maxNorm);
            return this;
        }
    }

    private static double requireNorm(double maxNorm) {
        if (!(maxNorm > 0) || Double.isInfinite(maxNorm)) {
            throw new IllegalArgumentException("maxNorm must be positive and finite, got " + maxNorm);
        }
        return maxNorm;
    }

    /**
     * As {@link #of(DistributedBackend, Model, TrainingConfig)}, averaging every
     * {@code accumulation}-th step (the others accumulate), in buckets of at most
     * {@code bucketBytes}.
     */
    public static DistributedTrainer of(
            DistributedBackend backend, Model model, TrainingConfig config, int accumulation, long bucketBytes) {
        return of(
                backend, model, config, new Options().accumulation(accumulation).bucketBytes(bucketBytes));
    }

    /** As {@link #of(DistributedBackend, Model, TrainingConfig)}, averaging as {@code options} say. */
    public static DistributedTrainer of(
            DistributedBackend backend, Model model, TrainingConfig config, Options options) {
        Objects.requireNonNull(backend, "backend");
        Objects.requireNonNull(options, "options");
        if (!backend.isInitialized()) {
            throw new IllegalStateException("initialize the backend before making a distributed trainer");
        }
        return new DistributedTrainer(backend, model, config, options);
    }

    /** What {@code model.newTrainer(config)} does before it makes the trainer: the config's initializers on the block. */
    private static Model prepare(Model model, TrainingConfig config) {
        if (model.getBlock() == null) {
            throw new IllegalStateException("set the model's block before making a trainer");
        }
        for (Pair<Initializer, Predicate<Parameter>> pair : config.getInitializers()) {
            if (pair.getKey() != null && pair.getValue() != null) {
                model.getBlock().setInitializer(pair.getKey(), pair.getValue());
            }
        }
        return model;
    }

    /** {@code config}; on a worker, its settings as they are now without the listeners that write logs or files. */
    static TrainingConfig quietOnWorkers(TrainingConfig config, boolean root) {
        return quietOnWorkers(config, root, config.getOptimizer());
    }

    /** As {@link #quietOnWorkers(TrainingConfig, boolean)}, DJL updating through {@code optimizer}. */
    private static TrainingConfig quietOnWorkers(TrainingConfig config, boolean root, Optimizer optimizer) {
        if (root && optimizer == config.getOptimizer()) {
            return config;
        }
        List<TrainingListener> kept = new ArrayList<>();
        for (TrainingListener l : config.getTrainingListeners()) {
            boolean writes = l instanceof LoggingTrainingListener
                    || l instanceof SaveModelTrainingListener
                    || l instanceof TimeMeasureTrainingListener
                    || l instanceof MemoryTrainingListener;
            if (root || !writes) {
                kept.add(l);
            }
        }
        return new Settings(
                config.getDevices(),
                config.getInitializers(),
                optimizer,
                config.getLossFunction(),
                config.getExecutorService(),
                config.getEvaluators(),
                kept);
    }

    /**
     * A config's settings read once, which is how DJL's Trainer reads them (all, when it is made): each component is
     * the getter of its name.
     */
    private record Settings(
            ai.djl.Device[] getDevices,
            PairList<Initializer, Predicate<Parameter>> getInitializers,
            Optimizer getOptimizer,
            Loss getLossFunction,
            ExecutorService getExecutorService,
            List<Evaluator> getEvaluators,
            List<TrainingListener> getTrainingListeners)
            implements TrainingConfig {}

    /** Initializes the model as DJL does, then every rank takes the root's parameters. */
    @Override
    public void initialize(Shape... shapes) {
        super.initialize(shapes);
        broadcastParameters();
    }

    /**
     * A {@link DistributedParquetDataset}'s next epoch, this rank's share of it; any other dataset
     * as DJL iterates it (shard a {@code RandomAccessDataset} with a {@link DistributedSampler}).
     */
    @Override
    public Iterable<Batch> iterateDataset(Dataset dataset) throws IOException, TranslateException {
        if (dataset instanceof DistributedParquetDataset parquet) {
            parquetDatasets.add(parquet);
            return parquet.getData(getManager(), backend.group());
        }
        return super.iterateDataset(dataset);
    }

    /**
     * DJL's gradient collector, marking where backward starts in the step ({@link
     * TrainingSteps#backwardStarted}) so that the step's computing splits into forward and backward.
     */
    @Override
    public GradientCollector newGradientCollector() {
        GradientCollector collector = super.newGradientCollector();
        return new GradientCollector() {
            @Override
            public void backward(NDArray target) {
                TrainingSteps.backwardStarted();
                collector.backward(target);
            }

            @Override
            public void zeroGradients() {
                collector.zeroGradients();
            }

            @Override
            public void close() {
                collector.close();
            }
        };
    }

    /** Closes the loaders of the Parquet datasets it iterated, then the trainer as DJL does. */
    @Override
    public void close() {
        for (DistributedParquetDataset d : parquetDatasets) {
            d.close();
        }
        parquetDatasets.clear();
        super.close();
    }

    /**
     * Averages the gradients across ranks (every {@code accumulation}-th call), then updates the
     * parameters; at the updates the divergence check says are due, compares them across ranks.
     *
     * @throws DivergenceCheck.ModelsDivergedException on every rank when some rank's parameters differ
     */
    @Override
    public void step() {
        if (++microBatches < accumulation) {
            if (averaged) {
                throw new IllegalStateException("synchronize() or clipGradNorm() came before a step that only "
                        + "accumulates (" + microBatches + " of " + accumulation + "): call it before the step that "
                        + "updates");
            }
            return;
        }
        microBatches = 0;
        if (!averaged) {
            TrainingSteps.Timing averaging = TrainingSteps.begin(TrainingSteps.Part.AVERAGE);
            averageGradients(clipEveryStep);
            averaging.end();
        }
        averaged = false;
        if (join != null) {
            updatingRanks = join.announce(this, UPDATE, 0);
        }
        TrainingSteps.Timing stepping = TrainingSteps.begin(TrainingSteps.Part.OPTIMIZER);
        ownShare();
        super.step();
        shareOwnedParameters();
        stepping.end();
        averageStatistics(join == null ? backend.worldSize() : -1, false);
        TrainingSteps.stepEnded(backend.rank());
        updates++;
        if (join == null && divergenceCheck.due(updates)) {
            checkDivergence();
        }
    }

    /**
     * Averages the gradients across ranks now, without stepping: afterwards each parameter's
     * gradient holds the average (divided by the accumulation), to read or scale; the next step
     * that updates applies it without averaging again. Calling it twice before a step averages once.
     * At ZeRO stage 2 only this rank's share holds the average (the others' hold its own gradients).
     */
    public void synchronize() {
        if (!averaged) {
            TrainingSteps.Timing averaging = TrainingSteps.begin(TrainingSteps.Part.AVERAGE);
            averageGradients(clipEveryStep);
            averaging.end();
            averaged = true;
        }
    }

    /**
     * Averages the gradients ({@link #synchronize()}) and scales them so that their global L2 norm,
     * over every trainable parameter, is at most {@code maxNorm} (PyTorch's {@code clip_grad_norm_}
     * over the averaged gradients: the coefficient is maxNorm / (norm + 1e-6)). Every rank holds the
     * same averaged gradients, so every rank clips alike. Call it before the step that updates.
     *
     * @return the norm of the averaged gradients before clipping
     * @throws IllegalArgumentException unless {@code maxNorm} is positive and finite
     */
    public double clipGradNorm(double maxNorm) {
        requireNorm(maxNorm);
        synchronize();
        if (join != null) {
            join.announce(this, CLIP, Double.doubleToLongBits(maxNorm));
        }
        return clipGradients(maxNorm);
    }

    /** The gradients, as they are, clipped to {@code maxNorm}; returns their norm before. */
    private double clipGradients(double maxNorm) {
        if (buckets == null) {
            buckets = layOut();
        }
        for (Bucket b : buckets) {
            if (b.mine()) {
                b.pack();
            } else {
                b.zero(); // another rank's share (ZeRO stage 2): counted there
            }
        }
        double norm = clip(maxNorm);
        for (Bucket b : buckets) {
            if (b.mine()) {
                b.unpack();
            }
        }
        return norm;
    }

    /**
     * Scales the buckets' values so that their global L2 norm is at most {@code maxNorm}; returns the
     * norm before. At ZeRO stage 2 each rank holds its share's averages (zeros elsewhere): the sum of
     * squares is summed over the ranks first.
     */
    private double clip(double maxNorm) {
        double sumOfSquares = 0;
        for (Bucket b : buckets) {
            sumOfSquares += b.sumOfSquares();
        }
        if (shardsGradients && backend.worldSize() > 1) {
            double[] sum = {sumOfSquares};
            backend.group().allreduce(DenseBuffer.of(sum), ReduceOp.SUM).await();
            sumOfSquares = sum[0];
        }
        double norm = Math.sqrt(sumOfSquares);
        double coefficient = maxNorm / (norm + 1e-6);
        if (coefficient < 1) {
            for (Bucket b : buckets) {
                b.scale(coefficient);
            }
        }
        return norm;
    }

    /**
     * The parameters that take no gradient averaged across the ranks still training ({@code
     * active}; -1: as the last update announced), this rank adding zeros where it joined.
     */
    private void averageStatistics(int active, boolean zeros) {
        ProcessGroup group = backend.group();
        if (group.size() == 1) {
            return;
        }
        if (statistics == null) {
            statistics = layOut(p -> !p.requiresGradient());
        }
        int ranks = active < 0 ? updatingRanks : active;
        List<Work> started = startAllreduces(statistics, zeros, Bucket::packValues);
        for (int i = 0; i < statistics.size(); i++) {
            started.get(i).await();
            Bucket b = statistics.get(i);
            if (join != null && ranks > 1) {
                b.divide(ranks);
            }
            b.unpackValues();
        }
    }

    /**
     * Packs each bucket ({@code pack}, or zeros where this rank joined) and starts its allreduce
     * (null alone): an average, or inside a join scope a sum, where the ranks that joined add zeros,
     * to divide by those still training.
     */
    private List<Work> startAllreduces(List<Bucket> of, boolean zeros, java.util.function.Consumer<Bucket> pack) {
        ProcessGroup group = backend.group();
        ReduceOp op = join == null ? ReduceOp.AVG : ReduceOp.SUM;
        List<Work> started = new ArrayList<>(of.size());
        for (Bucket b : of) {
            if (zeros) {
                b.zero();
            } else {
                pack.accept(b);
            }
            if (group.size() == 1) {
                started.add(null);
            } else {
                started.add(
                        b.owner < 0 ? group.allreduce(b.onTheWire(), op) : group.reduce(b.onTheWire(), op, b.owner));
            }
        }
        return started;
    }

    /** The scope opened: this trainer announces its averaging, clips and updates from now on. */
    @Override
    public void enter(Join join) {
        this.join = join;
    }

    /** On a rank that joined: the others' averaging (of zeros here), clip or update, as they do it. */
    @Override
    public void shadow(int phase, long argument, int activeRanks) {
        switch (phase) {
            case AVERAGE -> average(Double.longBitsToDouble(argument), activeRanks, true);
            case CLIP -> clipGradients(Double.longBitsToDouble(argument));
            case UPDATE -> {
                ownShare();
                super.step();
                shareOwnedParameters();
                averageStatistics(activeRanks, true);
                updates++;
            }
            default -> throw new IllegalStateException("a join scope announced phase " + phase + " of a DJL trainer");
        }
    }

    /** Every rank joined: announcing ends. */
    @Override
    public void leave() {
        this.join = null;
    }

    /** Every parameter's fingerprint, in block order, compared across ranks. */
    private void checkDivergence() {
        PairList<String, Parameter> parameters = getModel().getBlock().getParameters();
        long[] fingerprints = new long[parameters.size()];
        for (int i = 0; i < fingerprints.length; i++) {
            NDArray array = parameters.valueAt(i).getArray();
            fingerprints[i] = array == null ? 0 : fingerprint(array);
        }
        divergenceCheck.compare(updates, fingerprints, parameters::keyAt);
    }

    /**
     * The array's {@link DivergenceCheck#fingerprint(java.nio.ByteBuffer, int) fingerprint}: read in
     * place where DJL's engine allows.
     */
    static long fingerprint(NDArray array) {
        return DivergenceCheck.fingerprint(
                array.toByteBuffer(true), array.getDataType().getNumOfBytes());
    }

    /** How long steps have spent averaging gradients (packing, communication, unpacking), in nanoseconds. */
    public long communicationNanos() {
        return communicationNanos;
    }

    /** The optimizer this trainer updates the parameters with (its state is in {@link Checkpoints}). */
    public Optimizer optimizer() {
        return optimizer;
    }

    /** The backend this trainer averages over. */
    public DistributedBackend backend() {
        return backend;
    }

    /**
     * Goes on in a re-formed group, as an elastic run does after losing a worker or to take in
     * workers that joined: call it on every member of {@code backend} (initialized) between steps,
     * while each joiner calls {@link #initialize} then {@link #takeOptimizerState()}. Every rank
     * takes the root's parameters, the gradients start from zero and the buckets are laid out for
     * the new group. Without ZeRO every rank takes the root's optimizer state. Under ZeRO the
     * ranks exchange their shares and each keeps its share in the new group; a lost worker's share
     * is gone, and starts afresh for its parameters (momentum and moments from zero; their update
     * counts, and so their place in a learning-rate schedule, kept).
     *
     * @return how many trainable parameters' optimizer state started afresh (0 without ZeRO)
     */
    public int regroup(DistributedBackend backend) {
        Objects.requireNonNull(backend, "backend");
        if (!backend.isInitialized()) {
            throw new IllegalStateException("initialize the re-formed group's backend before regroup");
        }
        if (join != null) {
            throw new IllegalStateException("regroup inside a join scope: close the scope first");
        }
        this.backend = backend;
        this.divergenceCheck = DivergenceCheck.fromEnvironment(backend.group());
        buckets = null;
        statistics = null;
        microBatches = 0;
        averaged = false;
        for (Parameter p : trainable()) {
            if (p.getArray().hasGradient()) {
                try (NDArray g = p.getArray().getGradient()) {
                    g.subi(g); // a step the old group did not finish left its gradients here
                }
            }
        }
        broadcastParameters();
        return shareOptimizerState();
    }

    /**
     * In a worker that joined a running group (an elastic run's joiner), after {@link #initialize}:
     * takes the optimizer state the members hand over in their {@link #regroup}.
     */
    public void takeOptimizerState() {
        shareOptimizerState();
    }

    /**
     * In a new group: without ZeRO every rank takes the root's optimizer state; under ZeRO the
     * ranks' shares are exchanged and each rank keeps its new share. Returns the parameters whose
     * state no rank held (ZeRO: a lost worker's share).
     */
    private int shareOptimizerState() {
        if (backend.worldSize() > 1) {
            long[] count = {updates}; // a joiner counts on from the members' updates (the divergence check's steps)
            backend.group()
                    .broadcast(DenseBuffer.of(count), DistributedBackend.ROOT_RANK)
                    .await();
            updates = count[0];
        }
        Map<String, String> names = new HashMap<>();
        Map<String, Parameter> byName = new LinkedHashMap<>();
        for (Pair<String, Parameter> p : getModel().getBlock().getParameters()) {
            names.put(p.getValue().getId(), p.getKey());
            byName.put(p.getKey(), p.getValue());
        }
        if (sharded == null) {
            if (backend.worldSize() == 1) {
                return 0;
            }
            byte[] root = ObjectCollectives.broadcastBytes(
                    backend.group(),
                    backend.isRootWorker() ? OptimizerState.bytes(optimizer, names) : new byte[0],
                    DistributedBackend.ROOT_RANK);
            if (!backend.isRootWorker()) {
                OptimizerState.read(root, optimizer, byName, "the root's optimizer state");
            }
            return 0;
        }
        List<byte[]> shares = ObjectCollectives.allgatherBytes(backend.group(), OptimizerState.bytes(optimizer, names));
        for (int r = 0; r < shares.size(); r++) {
            if (r != backend.rank()) {
                OptimizerState.merge(shares.get(r), optimizer, byName, "rank " + r + "'s share of the optimizer state");
            }
        }
        Set<String> trainableIds = new HashSet<>();
        for (Parameter p : trainable()) {
            trainableIds.add(p.getId());
        }
        Set<String> held = OptimizerState.parameterIds(optimizer);
        int lost = 0;
        if (!held.isEmpty()) {
            for (String id : trainableIds) {
                lost += held.contains(id) ? 0 : 1;
            }
        }
        OptimizerState.alignCounts(optimizer, trainableIds);
        owners = null;
        ownShare();
        OptimizerState.retain(optimizer, ownedIds);
        return lost;
    }

    /** Whether each rank keeps only its share of the optimizer state (ZeRO stage 1 or 2). */
    public boolean shardsOptimizerState() {
        return sharded != null;
    }

    /** ZeRO: the ids of the parameters this rank updates. */
    Set<String> ownedParameterIds() {
        ownShare();
        return ownedIds;
    }

    /**
     * ZeRO, once per group: each trainable parameter's owner, a contiguous share of them in block
     * order balanced by size (a parameter goes to the rank whose even share of all the elements holds
     * its middle), and this rank's optimizer told which it updates.
     */
    private void ownShare() {
        if (sharded == null || owners != null) {
            return;
        }
        List<Parameter> trainable = trainable();
        long total = 0;
        for (Parameter p : trainable) {
            total += p.getArray().size();
        }
        int world = backend.worldSize();
        int[] owner = new int[trainable.size()];
        Set<String> mine = new java.util.HashSet<>();
        long before = 0;
        for (int i = 0; i < owner.length; i++) {
            long size = trainable.get(i).getArray().size();
            // The rank whose even share holds the parameter's middle: one large parameter does not pull its
            // followers onto its owner.
            owner[i] = (int) Math.min(world - 1, (2 * before + size) * world / Math.max(1, 2 * total));
            before += size;
            if (owner[i] == backend.rank()) {
                mine.add(trainable.get(i).getId());
            }
        }
        sharded.own(mine);
        ownedIds = Set.copyOf(mine);
        owners = owner;
    }

    /** ZeRO, after an update: each owner's parameters broadcast to every rank. */
    private void shareOwnedParameters() {
        if (sharded == null || backend.worldSize() == 1) {
            return;
        }
        List<Parameter> trainable = trainable();
        List<Work> started = new ArrayList<>(trainable.size());
        for (int i = 0; i < trainable.size(); i++) {
            Parameter p = trainable.get(i);
            if (owners[i] != backend.rank() && p.getArray().hasGradient()) {
                // The optimizer's update zeroes a gradient; the others' it did not update, so here.
                try (NDArray g = p.getArray().getGradient()) {
                    g.subi(g);
                }
            }
            started.add(backend.group().broadcast(DenseBuffer.of(p.getArray().toByteBuffer(true), type(p)), owners[i]));
        }
        for (Work w : started) {
            w.await();
        }
    }

    /** The parameters that take a gradient, in block order. */
    private List<Parameter> trainable() {
        List<Parameter> trainable = new ArrayList<>();
        for (Parameter p : getModel().getBlock().getParameters().values()) {
            if (p.requiresGradient() && p.getArray() != null) {
                trainable.add(p);
            }
        }
        return trainable;
    }

    /** The root's value of every initialized parameter, into every rank's, in block order. */
    private void broadcastParameters() {
        ProcessGroup group = backend.group();
        if (group.size() == 1) {
            return;
        }
        for (Parameter p : getModel().getBlock().getParameters().values()) {
            NDArray array = p.getArray();
            if (array == null) {
                continue;
            }
            ByteBuffer memory = array.toByteBuffer(true);
            group.broadcast(DenseBuffer.of(memory, type(p)), DistributedBackend.ROOT_RANK)
                    .await();
        }
    }

    /** Averages the gradients across ranks, divides by the accumulation, clips to {@code maxNorm} (0: not). */
    private void averageGradients(double maxNorm) {
        int active =
                join == null ? backend.worldSize() : join.announce(this, AVERAGE, Double.doubleToLongBits(maxNorm));
        average(maxNorm, active, false);
    }

    /**
     * The averaging itself, over {@code active} ranks: of this rank's gradients, or (a rank that
     * joined) of zeros; then divided by the accumulation, clipped and unpacked into the gradients.
     */
    private void average(double maxNorm, int active, boolean zeros) {
        ProcessGroup group = backend.group();
        if (group.size() == 1 && accumulation == 1 && maxNorm == 0) {
            return;
        }
        long start = System.nanoTime();
        if (buckets == null) {
            buckets = layOut();
        }
        List<Work> started = startAllreduces(buckets, zeros, Bucket::pack);
        for (int i = 0; i < buckets.size(); i++) {
            Bucket b = buckets.get(i);
            if (started.get(i) != null) {
                started.get(i).await();
                if (!b.mine()) {
                    b.zero(); // another rank's share (ZeRO stage 2): no average here
                    continue;
                }
                b.received();
            }
            int divisor = accumulation * (join != null ? active : 1);
            if (divisor > 1) {
                buckets.get(i).divide(divisor);
            }
        }
        if (maxNorm > 0) {
            clip(maxNorm);
        }
        for (Bucket b : buckets) {
            if (b.mine()) {
                b.unpack();
            }
        }
        communicationNanos += System.nanoTime() - start;
    }

    /**
     * The trainable parameters in block order, in buckets by element type and size (and at ZeRO
     * stage 2 by owner, which each bucket is reduced to).
     */
    private List<Bucket> layOut() {
        return layOut(Parameter::requiresGradient);
    }

    /** The parameters {@code which} takes, in block order, in buckets by element type and size. */
    private List<Bucket> layOut(Predicate<Parameter> which) {
        ownShare();
        List<Bucket> laidOut = new ArrayList<>();
        Bucket open = null;
        int trainable = 0;
        for (Parameter p : getModel().getBlock().getParameters().values()) {
            if (!which.test(p) || p.getArray() == null) {
                continue;
            }
            requireHostMemory(p.getName(), p.getArray().getDevice());
            DataType type = type(p);
            long bytes = p.getArray().size() * type.byteSize();
            int owner = shardsGradients && p.requiresGradient() ? owners[trainable++] : -1;
            if (open == null
                    || open.type != type
                    || open.owner != owner
                    || (open.bytes > 0 && open.bytes + bytes > bucketBytes)) {
                // Statistics travel as they are; float32 gradients as the options say.
                open = new Bucket(type, type == DataType.FLOAT32 && p.requiresGradient() ? wire : null, owner);
                laidOut.add(open);
            }
            open.add(p, bytes);
        }
        for (Bucket b : laidOut) {
            b.allocate();
        }
        return laidOut;
    }

    /**
     * Refuses a parameter on another device than the CPU, naming it: Cohort reduces host memory, and
     * a GPU array's gradient read through DJL is a copy, its averaged values written back lost.
     */
    static void requireHostMemory(String parameter, ai.djl.Device device) {
        if (!ai.djl.Device.Type.CPU.equals(device.getDeviceType())) {
            throw new IllegalArgumentException("parameter '" + parameter + "' is on " + device
                    + "; Cohort averages gradients in host memory: train on the CPU (TrainingConfig.optDevices("
                    + "new Device[] {Device.cpu()})), or copy the gradients to the CPU yourself");
        }
    }

    private static DataType type(Parameter p) {
        ai.djl.ndarray.types.DataType t = p.getArray().getDataType();
        return switch (t) {
            case FLOAT32 -> DataType.FLOAT32;
            case FLOAT64 -> DataType.FLOAT64;
            case INT32 -> DataType.INT32;
            case INT64 -> DataType.INT64;
            default ->
                throw new IllegalArgumentException("parameter '" + p.getName() + "' is " + t
                        + "; Cohort averages float32, float64, int32 and int64 parameters (cast the model, e.g. "
                        + "model.setDataType(DataType.FLOAT32))");
        };
    }

    /** Consecutive parameters of one type whose gradients travel as one buffer. */
    private final class Bucket {
        /** Elements divided at a time; zero bytes written at a time for a gradient a step did not produce. */
        private static final int CHUNK = 2048;

        private static final byte[] ZEROS = new byte[8192];

        final DataType type;
        /** The 16-bit type the values travel as, or null: as they are. */
        final DataType wire;
        /** The rank the bucket is reduced to (ZeRO stage 2), or -1: allreduced. */
        final int owner;

        final List<Parameter> params = new ArrayList<>();
        long bytes;
        ByteBuffer buffer;
        /** The values as 16-bit floats while they travel (with {@link #wire}). */
        ShortBuffer half;

        Bucket(DataType type, DataType wire, int owner) {
            this.type = type;
            this.wire = wire;
            this.owner = owner;
        }

        /** Whether this rank holds the bucket's average: every bucket, or at ZeRO stage 2 its own share's. */
        boolean mine() {
            return owner < 0 || owner == DistributedTrainer.this.backend.rank();
        }

        void add(Parameter p, long size) {
            params.add(p);
            bytes += size;
        }

        void allocate() {
            buffer = ByteBuffer.allocateDirect(Math.toIntExact(bytes)).order(ByteOrder.nativeOrder());
            if (wire != null) {
                half = ByteBuffer.allocateDirect(Math.toIntExact(bytes / 2))
                        .order(ByteOrder.nativeOrder())
                        .asShortBuffer();
            }
        }

        /** What travels: the values, or (with {@link #wire}) the values rounded to 16 bits. */
        DenseBuffer onTheWire() {
            if (wire == null) {
                return DenseBuffer.of(buffer.duplicate().clear(), type);
            }
            HalfFloats.round(wire, floats(), half);
            return DenseBuffer.of(half.duplicate().clear(), wire);
        }

        /** After the allreduce: (with {@link #wire}) the 16-bit results back into the values. */
        void received() {
            if (wire == null) {
                return;
            }
            HalfFloats.widen(wire, half, floats());
        }

        private FloatBuffer floats() {
            return buffer.duplicate().clear().order(ByteOrder.nativeOrder()).asFloatBuffer();
        }

        private DoubleBuffer doubles() {
            return buffer.duplicate().clear().order(ByteOrder.nativeOrder()).asDoubleBuffer();
        }

        /** The sum of the squared values (float32 and float64; integer gradients do not count). */
        double sumOfSquares() {
            double[] sum = {0};
            update(v -> {
                sum[0] += v * v;
                return v;
            });
            return sum[0];
        }

        /** Every float value times {@code coefficient}. */
        void scale(double coefficient) {
            update(v -> v * coefficient);
        }

        /** Every float32 or float64 value replaced by {@code f} of it; integer gradients are left alone. */
        private void update(java.util.function.DoubleUnaryOperator f) {
            if (type == DataType.FLOAT32) {
                FloatBuffer values = floats();
                for (int i = 0; i < values.limit(); i++) {
                    values.put(i, (float) f.applyAsDouble(values.get(i)));
                }
            } else if (type == DataType.FLOAT64) {
                DoubleBuffer values = doubles();
                for (int i = 0; i < values.limit(); i++) {
                    values.put(i, f.applyAsDouble(values.get(i)));
                }
            }
        }

        /** The parameters' own values into the buffer (statistics, which have no gradient). */
        void packValues() {
            buffer.clear();
            for (Parameter p : params) {
                buffer.put(p.getArray().toByteBuffer(true));
            }
        }

        /** The buffer back into the parameters' values. */
        void unpackValues() {
            buffer.clear();
            for (Parameter p : params) {
                NDArray array = p.getArray();
                int size = Math.toIntExact(array.size() * type.byteSize());
                ByteBuffer part =
                        buffer.duplicate().limit(buffer.position() + size).slice();
                buffer.position(buffer.position() + size);
                array.set(part.order(ByteOrder.nativeOrder()));
            }
        }

        /** Zeros into the buffer: what a rank that joined adds. */
        void zero() {
            buffer.clear();
            for (long left = bytes; left > 0; left -= ZEROS.length) {
                buffer.put(ZEROS, 0, (int) Math.min(left, ZEROS.length));
            }
        }

        /** Every parameter's gradient into the buffer; zeros for one this step did not produce. */
        void pack() {
            buffer.clear();
            for (Parameter p : params) {
                int size = Math.toIntExact(p.getArray().size() * type.byteSize());
                if (!p.getArray().hasGradient()) {
                    for (int left = size; left > 0; left -= ZEROS.length) {
                        buffer.put(ZEROS, 0, Math.min(left, ZEROS.length));
                    }
                    continue;
                }
                try (NDArray grad = p.getArray().getGradient()) {
                    buffer.put(grad.toByteBuffer(true));
                }
            }
        }

        /** The averaged gradients back into the parameters' gradients, where they lie. */
        void unpack() {
            buffer.clear();
            for (Parameter p : params) {
                int size = Math.toIntExact(p.getArray().size() * type.byteSize());
                ByteBuffer part =
                        buffer.duplicate().limit(buffer.position() + size).slice();
                buffer.position(buffer.position() + size);
                if (!p.getArray().hasGradient()) {
                    continue;
                }
                try (NDArray grad = p.getArray().getGradient()) {
                    ByteBuffer memory = grad.toByteBuffer(true);
                    memory.put(part);
                }
            }
        }

        /**
         * Every element divided by {@code k}, a chunk at a time through a heap array, where the JIT
         * vectorizes the loop (element by element through a direct buffer it does not).
         */
        void divide(int k) {
            switch (type) {
                case FLOAT32 -> {
                    FloatBuffer f = buffer.duplicate()
                            .clear()
                            .order(ByteOrder.nativeOrder())
                            .asFloatBuffer();
                    float[] chunk = new float[Math.min(CHUNK, f.limit())];
                    for (int from = 0; from < f.limit(); from += chunk.length) {
                        int m = Math.min(chunk.length, f.limit() - from);
                        f.get(from, chunk, 0, m);
                        for (int i = 0; i < m; i++) {
                            chunk[i] = chunk[i] / k;
                        }
                        f.put(from, chunk, 0, m);
                    }
                }
                case FLOAT64 -> {
                    DoubleBuffer d = buffer.duplicate()
                            .clear()
                            .order(ByteOrder.nativeOrder())
                            .asDoubleBuffer();
                    double[] chunk = new double[Math.min(CHUNK, d.limit())];
                    for (int from = 0; from < d.limit(); from += chunk.length) {
                        int m = Math.min(chunk.length, d.limit() - from);
                        d.get(from, chunk, 0, m);
                        for (int i = 0; i < m; i++) {
                            chunk[i] = chunk[i] / k;
                        }
                        d.put(from, chunk, 0, m);
                    }
                }
                default -> throw new IllegalArgumentException("integer gradients cannot be divided by " + k);
            }
        }
    }
}
