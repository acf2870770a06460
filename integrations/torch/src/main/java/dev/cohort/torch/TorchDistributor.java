package dev.cohort.torch;

import dev.cohort.api.DistributeRequest;
import dev.cohort.api.Distributed;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.Distributor;
import dev.cohort.api.DivergenceCheck;
import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.libtorch.LibTorch;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import org.bytedeco.pytorch.InputArchive;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Optimizer;
import org.bytedeco.pytorch.OutputArchive;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;

/**
 * {@code distribute()} for JavaCPP PyTorch: for a {@link Module}, the root's parameters and
 * buffers are broadcast to every rank; an {@link Optimizer} gets the root's state (Horovod's
 * {@code broadcast_optimizer_state}) and comes back as a {@link DistributedOptimizer}; a
 * {@link ShardedLoader} or a {@link ShardedMnistLoader} (libtorch's own MNIST loader) comes back
 * over this rank's shard ({@link ShardSampler}), a {@link ParquetLoader} over this rank's share of
 * its Parquet files, agreeing on read errors with the other ranks; any other training data is refused (it would reach
 * every rank whole); the learning-rate scheduler is passed through.
 *
 * <p>The parameters whose gradients are averaged are the request's {@code modelParameters} when
 * given (a {@code TensorVector}, a {@code Tensor}, an array or an {@code Iterable} of tensors: the
 * parameters to train, as DeepSpeed's {@code model_parameters}), else the model's, else the
 * optimizer's. The optimizer must update only parameters among them: one it updates whose gradient
 * is not averaged would drift apart between ranks, and is refused.
 *
 * <p>Options: {@value #BUCKET_BYTES} (a Number, default 25 MiB) sets the gradient bucket size;
 * {@value #OVERLAP} (Boolean) overlaps communication with backward, by default where the host
 * has a CPU the ranks' compute threads leave free ({@link #overlapPays});
 * {@value #BROADCAST_BUFFERS} (Boolean, default true) copies the root's module buffers to every
 * rank after each step; {@value #DROP_LAST} (Boolean, default false) cuts the dataset to a
 * multiple of the world size instead of padding it by repeating examples;
 * {@value #FIND_UNUSED_PARAMETERS} (Boolean, default false) leaves parameters that no rank used in
 * a step without a gradient, as in one process (DDP's {@code find_unused_parameters});
 * {@value #GRAD_COMPRESSION} ({@code "bf16"}, {@code "fp16"} or {@code "none"}) sends float32
 * gradients as 16-bit floats; {@value #ZERO_STAGE} (0, 1 or 2) shards the optimizer state (and at
 * 2 the averaged gradients) across ranks, DeepSpeed's ZeRO; {@value #DIVERGENCE_CHECK} (a Number)
 * sets the steps between checks that the ranks' parameters are the same. Other keys are refused.
 * {@link TorchTraining#distribute} returns the parts typed; through this interface the optimizer
 * comes back as a {@link DistributedOptimizer} (an {@code Optimizer}, not the {@code SGD} passed).
 */
public final class TorchDistributor implements Distributor {

    private static final System.Logger LOG = System.getLogger(TorchDistributor.class.getName());

    /** Option key: gradient bucket size in bytes. */
    public static final String BUCKET_BYTES = "bucketBytes";
    /** Option key: Boolean, start bucket allreduces during backward (default: {@link #overlapPays}). */
    public static final String OVERLAP = "overlap";
    /** Option key: Boolean, copy the root's module buffers to every rank after each step (default true). */
    public static final String BROADCAST_BUFFERS = "broadcastBuffers";
    /** Option key: Boolean, the data shards drop the dataset's last examples rather than repeat some (default false). */
    public static final String DROP_LAST = "dropLast";
    /**
     * Option key: Boolean, parameters that no rank had a gradient for in a step keep none, as in one
     * process (DDP's {@code find_unused_parameters}; one more small allreduce per step; default false).
     */
    public static final String FIND_UNUSED_PARAMETERS = "findUnusedParameters";
    /**
     * Option key: String {@code "bf16"} or {@code "fp16"} (or {@code "none"}, the default): float32
     * gradient buckets travel as 16-bit floats, halving the bytes on the wire (PyTorch's
     * {@code bf16_compress_hook}/{@code fp16_compress_hook}).
     */
    public static final String GRAD_COMPRESSION = "gradCompression";
    /**
     * Option key: Number 0, 1 or 2 (default 0), DeepSpeed's ZeRO stage: at 1 each rank keeps and
     * updates the optimizer state of its own share of the parameters only, at 2 it also receives
     * only their averaged gradients (reduce-scatter instead of allreduce); see {@link ZeroShards}.
     */
    public static final String ZERO_STAGE = "zeroStage";
    /**
     * Option key: Number, the steps between {@link DivergenceCheck}s of the ranks' parameters
     * (0 turns them off; default: environment variable {@value DivergenceCheck#ENV_EVERY}, else
     * {@value DivergenceCheck#DEFAULT_EVERY}); the first step is always checked.
     */
    public static final String DIVERGENCE_CHECK = "divergenceCheck";
    /**
     * Option key: String {@code "fp32"} (the default), {@code "bf16"} or {@code "fp16"}, the type
     * forward and backward compute in under {@link DistributedOptimizer#autocast()}, with float32
     * parameters; at fp16 with dynamic loss scaling ({@link DistributedOptimizer#scaleLoss}).
     */
    public static final String PRECISION = "precision";
    /** Option key: Number, fp16's first loss scale (default 65536, as PyTorch's {@code GradScaler}). */
    public static final String INITIAL_LOSS_SCALE = "initialLossScale";
    /** Option key: Number, the steps without overflow after which fp16's loss scale doubles (default 2000). */
    public static final String LOSS_SCALE_WINDOW = "lossScaleWindow";

    private static final java.util.Set<String> OPTIONS = java.util.Set.of(
            BUCKET_BYTES,
            OVERLAP,
            BROADCAST_BUFFERS,
            DROP_LAST,
            FIND_UNUSED_PARAMETERS,
            GRAD_COMPRESSION,
            ZERO_STAGE,
            DIVERGENCE_CHECK,
            PRECISION,
            INITIAL_LOSS_SCALE,
            LOSS_SCALE_WINDOW);

    /**
     * Extracts libtorch's natives, one process at a time, without loading libtorch ({@link
     * LibTorch#prepare}): the program's first tensor then loads it safely, while a program that
     * uses another framework's libtorch (DJL's, with this module on its class path) can still load
     * that one, before or after the backend. Libtorch loads when a tensor, {@link #distribute} or
     * the gloo engine needs it. Nothing when another libtorch is already loaded.
     */
    @Override
    public void prepare() {
        if (LibTorch.foreignLibtorch().isPresent()) {
            return;
        }
        LibTorch.prepare();
    }

    @Override
    public boolean supports(DistributeRequest<?, ?, ?, ?> request) {
        return isTorchType(request.model())
                || isTorchType(request.optimizer())
                || isTorchType(request.trainingData())
                || request.trainingData() instanceof ShardedLoader
                || request.trainingData() instanceof ShardedMnistLoader
                || request.trainingData() instanceof ParquetLoader;
    }

    private static boolean isTorchType(Object o) {
        return o != null && o.getClass().getName().startsWith("org.bytedeco.pytorch.")
                || o instanceof Module
                || o instanceof Optimizer;
    }

    @Override
    @SuppressWarnings("unchecked")
    public <M, O, D, S> Distributed<M, O, D, S> distribute(
            DistributedBackend backend, DistributeRequest<M, O, D, S> request) {
        LibTorch.load();
        for (String key : request.options().keySet()) {
            if (!OPTIONS.contains(key)) {
                throw new IllegalArgumentException("unknown option '" + key + "' for the torch integration; it knows "
                        + new java.util.TreeSet<>(OPTIONS));
            }
        }
        long bucketBytes = option(request, BUCKET_BYTES, Number.class, GradientBuckets.DEFAULT_BUCKET_BYTES)
                .longValue();
        Boolean overlapAsked = option(request, OVERLAP, Boolean.class, null);
        boolean broadcastBuffers = option(request, BROADCAST_BUFFERS, Boolean.class, true);
        boolean dropLast = option(request, DROP_LAST, Boolean.class, false);
        boolean findUnused = option(request, FIND_UNUSED_PARAMETERS, Boolean.class, false);
        DataType compression = compression(option(request, GRAD_COMPRESSION, String.class, "none"));
        Number zeroOption = option(request, ZERO_STAGE, Number.class, 0);
        int zeroStage = zeroOption.intValue();
        if (zeroStage < 0 || zeroStage > 2 || zeroOption.doubleValue() != zeroStage) {
            throw new IllegalArgumentException("option '" + ZERO_STAGE + "' must be 0, 1 or 2, got " + zeroOption);
        }
        if (zeroStage == 2 && Boolean.TRUE.equals(overlapAsked)) {
            throw new IllegalArgumentException(
                    "ZeRO stage 2 reduce-scatters the gradients at the step, after backward: " + "option '" + OVERLAP
                            + "' cannot be true with it (use stage 1 to overlap allreduces with backward)");
        }
        Number checkEvery = option(request, DIVERGENCE_CHECK, Number.class, DivergenceCheck.every(System.getenv()));
        if (checkEvery.intValue() < 0 || checkEvery.doubleValue() != checkEvery.intValue()) {
            throw new IllegalArgumentException("option '" + DIVERGENCE_CHECK + "' must be a whole number of steps >= 0 "
                    + "(0 turns the check off), got " + checkEvery);
        }
        Precision precision = Precision.of(option(request, PRECISION, String.class, "fp32"));
        Number initialScale = option(request, INITIAL_LOSS_SCALE, Number.class, LossScaler.DEFAULT_INITIAL_SCALE);
        Number scaleWindow = option(request, LOSS_SCALE_WINDOW, Number.class, LossScaler.DEFAULT_WINDOW);
        if (precision != Precision.FP16
                && (request.options().containsKey(INITIAL_LOSS_SCALE)
                        || request.options().containsKey(LOSS_SCALE_WINDOW))) {
            throw new IllegalArgumentException("options '" + INITIAL_LOSS_SCALE + "' and '" + LOSS_SCALE_WINDOW
                    + "' tune fp16's loss scaling; precision " + precision + " scales no loss");
        }
        ProcessGroup group = backend.group();
        Object model = request.model();
        if (model != null && !(model instanceof Module)) {
            throw new IllegalArgumentException(
                    "the torch integration distributes org.bytedeco.pytorch.Module models, got "
                            + model.getClass().getName());
        }
        D data = request.trainingData();
        if (data instanceof org.bytedeco.pytorch.MNISTRandomDataLoader && !(data instanceof ShardedMnistLoader)
                || data instanceof org.bytedeco.pytorch.MNISTMapDataset) {
            throw new IllegalArgumentException("libtorch's MNISTRandomDataLoader keeps its dataset and sampler out of "
                    + "reach, so it cannot be sharded: in place of new MNISTRandomDataLoader(data, new RandomSampler(...), "
                    + "options) pass ShardedMnistLoader.of(data, options, seed), an MNISTRandomDataLoader whose loop stays "
                    + "the same");
        }
        if (data != null
                && !(data instanceof ShardedLoader)
                && !(data instanceof ShardedMnistLoader)
                && !(data instanceof ParquetLoader)) {
            throw new IllegalArgumentException("the torch integration shards training data given as a "
                    + ShardedLoader.class.getName() + " or a " + ParquetLoader.class.getName() + "; a "
                    + data.getClass().getName()
                    + " would reach every rank whole, "
                    + "and each would train on all of it: pass ShardedLoader.of(dataset, batchSize, shuffle, seed), or pass "
                    + "no training data and shard it yourself with a ShardSampler");
        }
        Module module = (Module) model;
        if (module != null) {
            broadcastState(group, module);
        }
        O optimizer = request.optimizer();
        if (optimizer != null) {
            if (!(optimizer instanceof Optimizer)) {
                throw new IllegalArgumentException("expected an org.bytedeco.pytorch.Optimizer, got "
                        + optimizer.getClass().getName());
            }
            Optimizer local = (Optimizer) optimizer;
            TensorVector params = request.modelParameters() != null
                    ? ModelParameters.of(request.modelParameters())
                    : module != null ? module.parameters() : ModelParameters.ofOptimizer(local);
            ModelParameters.checkCovers(params, ModelParameters.ofOptimizer(local));
            if (zeroStage > 0) {
                checkShardable(group, local, findUnused);
            } else {
                broadcastOptimizerState(group, local);
            }
            boolean overlap = overlapAsked != null ? overlapAsked : overlapPays(backend);
            BufferBroadcast buffers =
                    module != null && broadcastBuffers ? BufferBroadcast.of(group, module.buffers()) : null;
            GradientBuckets buckets = zeroStage == 2
                    ? null
                    : new GradientBuckets(group, params, bucketBytes, overlap, findUnused, compression);
            ZeroShards zero = zeroStage > 0 ? new ZeroShards(group, local, zeroStage, buckets, compression) : null;
            boolean several = group.size() > 1;
            BypassGuard bypass = several ? bypassGuard(params) : null;
            BackwardMark.on(params);
            DivergenceWatch divergence =
                    several ? new DivergenceWatch(group, params, module, checkEvery.intValue()) : null;
            LossScaler scaler = precision == Precision.FP16
                    ? new LossScaler(group, initialScale.doubleValue(), scaleWindow.intValue())
                    : null;
            optimizer =
                    (O) new DistributedOptimizer(local, buckets, zero, buffers, bypass, divergence, precision, scaler);
        }
        if (data instanceof ShardedLoader loader) {
            data = (D) loader.sharded(backend.worldSize(), backend.rank(), dropLast);
        } else if (data instanceof ShardedMnistLoader loader) {
            data = (D) loader.sharded(backend.worldSize(), backend.rank(), dropLast);
        } else if (data instanceof ParquetLoader loader) {
            data = (D) loader.sharded(
                    backend.worldSize(), backend.rank(), dropLast, backend.worldSize() > 1 ? group : null);
        }
        return new Distributed<>(request.model(), optimizer, data, request.lrScheduler());
    }

    /**
     * A guard on the smallest parameter that takes gradients (a bias, cheap to fingerprint at each
     * backward pass; the last registered among equals); null when none takes gradients.
     */
    private static BypassGuard bypassGuard(TensorVector params) {
        Tensor smallest = null;
        for (long i = params.size() - 1; i >= 0; i--) {
            Tensor p = params.get(i);
            if (p.requires_grad() && (smallest == null || p.numel() < smallest.numel())) {
                smallest = p;
            }
        }
        return smallest == null ? null : new BypassGuard(smallest);
    }

    /** The 16-bit type that option {@value #GRAD_COMPRESSION} names, or null for none. */
    static DataType compression(String name) {
        return switch (name) {
            case "none" -> null;
            case "bf16" -> DataType.BFLOAT16;
            case "fp16" -> DataType.FLOAT16;
            default ->
                throw new IllegalArgumentException(
                        "option '" + GRAD_COMPRESSION + "' must be bf16, fp16 or none, got " + name);
        };
    }

    /**
     * Refuses what ZeRO cannot shard: an optimizer that already has state on some rank (the shards
     * take the parameters' place and would start without it), LBFGS (not element-wise), and
     * {@value #FIND_UNUSED_PARAMETERS} (a shard is stepped whole, so no parameter can sit a step out).
     */
    private static void checkShardable(ProcessGroup group, Optimizer local, boolean findUnused) {
        if (findUnused) {
            throw new IllegalArgumentException(
                    "option '" + FIND_UNUSED_PARAMETERS + "' cannot be honoured with ZeRO: "
                            + "each rank steps its shard of the flattened parameters whole, so no parameter can sit a step out");
        }
        if (local instanceof org.bytedeco.pytorch.LBFGS) {
            throw new IllegalArgumentException("ZeRO shards optimizers that update each element on its own (SGD, Adam, "
                    + "AdamW, RMSprop, Adagrad); LBFGS is not one");
        }
        int[] hasState = {OptimizerArchives.stateBytes(local) > 0 ? 1 : 0};
        group.allreduce(DenseBuffer.of(hasState), ReduceOp.MAX).await();
        if (hasState[0] == 1) {
            throw new IllegalArgumentException("the optimizer already has state (it stepped, or loaded a checkpoint, "
                    + "on some rank) and ZeRO gives it new tensors, its shards, to step: distribute a fresh optimizer, then "
                    + "load the checkpoint with Checkpoints.load");
        }
    }

    /** Option {@code key} as a {@code type}, or {@code otherwise} when absent; a value of another type is refused. */
    private static <T> T option(DistributeRequest<?, ?, ?, ?> request, String key, Class<T> type, T otherwise) {
        Object value = request.options().get(key);
        if (value == null) {
            return otherwise;
        }
        if (!type.isInstance(value)) {
            throw new IllegalArgumentException("option '" + key + "' must be a " + type.getSimpleName() + ", got "
                    + value.getClass().getSimpleName() + " " + value);
        }
        return type.cast(value);
    }

    /**
     * Whether overlapping communication with backward pays on this host: only where the ranks'
     * compute threads leave a CPU free for it. Where they fill every CPU, the communication thread
     * takes CPU time from backward, and averaging at the step was measured faster (2 ranks of one
     * compute thread on 2 CPUs, docs/lab/results/training-sitting-3: shm 10,593 samples/s against
     * 8,460 overlapped, gloo 5,356 against 5,142). Rank 0 logs the choice.
     */
    static boolean overlapPays(DistributedBackend backend) {
        int threads = torch.get_num_threads();
        int cpus = Runtime.getRuntime().availableProcessors();
        long busy = (long) backend.localWorldSize() * threads;
        boolean pays = backend.worldSize() > 1 && busy < cpus;
        if (backend.worldSize() > 1 && backend.isRootWorker()) {
            LOG.log(
                    System.Logger.Level.INFO,
                    (pays ? "gradients averaged during backward" : "gradients averaged at the step")
                            + ": " + backend.localWorldSize() + " rank(s) of " + threads + " compute thread(s) on "
                            + cpus + " CPU(s) "
                            + (pays
                                    ? "leave a CPU for communication"
                                    : "leave no CPU for communication to overlap backward")
                            + " (option " + OVERLAP + " decides)");
        }
        return pays;
    }

    /** Every parameter and buffer of the root's model, into every rank's, in registration order. */
    static void broadcastState(ProcessGroup group, Module module) {
        TensorVector[] kinds = {module.parameters(), module.buffers()};
        for (int k = 0; k < kinds.length; k++) {
            TensorVector tensors = kinds[k];
            for (long i = 0; i < tensors.size(); i++) {
                Tensor t = tensors.get(i);
                TensorBuffers.checkMovable(t, (k == 0 ? "parameter " : "buffer ") + i + " of the model");
                TorchCollectives.broadcast(group, t, DistributedBackend.ROOT_RANK);
            }
        }
    }

    /**
     * The root's optimizer state (serialized by libtorch), loaded by every other rank: first its
     * length, then the bytes, moved as int64 words.
     */
    static void broadcastOptimizerState(ProcessGroup group, Optimizer optimizer) {
        if (group.size() == 1) {
            return;
        }
        try {
            Path file = Files.createTempFile("cohort-optimizer-", ".pt");
            try {
                byte[] bytes = new byte[0];
                if (group.rank() == DistributedBackend.ROOT_RANK) {
                    OutputArchive archive = new OutputArchive();
                    optimizer.save(archive);
                    archive.save_to(file.toString());
                    bytes = Files.readAllBytes(file);
                }
                long[] length = {bytes.length};
                group.broadcast(DenseBuffer.of(length), DistributedBackend.ROOT_RANK)
                        .await();
                int words = (int) ((length[0] + 7) / 8);
                ByteBuffer payload = ByteBuffer.allocateDirect(words * 8).order(ByteOrder.nativeOrder());
                payload.put(bytes).clear();
                group.broadcast(DenseBuffer.of(payload, DataType.INT64), DistributedBackend.ROOT_RANK)
                        .await();
                if (group.rank() != DistributedBackend.ROOT_RANK) {
                    byte[] received = new byte[(int) length[0]];
                    payload.get(received);
                    Files.write(file, received);
                    InputArchive archive = new InputArchive();
                    archive.load_from(file.toString());
                    optimizer.load(archive);
                }
            } finally {
                Files.deleteIfExists(file);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("broadcasting the optimizer state failed: " + e.getMessage(), e);
        }
    }
}
