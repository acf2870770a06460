package dev.cohort.djl;

import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.Parameter;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.EasyTrain;
import ai.djl.training.GradientCollector;
import ai.djl.training.dataset.ArrayDataset;
import ai.djl.training.dataset.Batch;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import dev.cohort.api.Backends;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.checkpoint.CheckpointFile;
import dev.cohort.api.checkpoint.TrainingPosition;
import dev.cohort.api.steps.TrainingSteps;
import dev.cohort.testkit.WorkerProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * One rank of a DJL training job on the tcp engine: an MLP 8-32-4 on synthetic data, plain SGD.
 * Args: {@code MODE BATCH STEPS ACCUMULATION OUT [KEY=VALUE...]}: mode {@code loop} (a hand-written
 * loop) or {@code fit} ({@code EasyTrain.fit} over one epoch), each rank's batch, the optimizer steps
 * per epoch, the batches per step; the root writes every parameter, in block order, to {@code OUT},
 * one value per line. Options: {@code optimizer=sgd|momentum|adam}, {@code epochs=E} (loop),
 * {@code shuffle=true}, {@code batchnorm=true} (a BatchNorm after the first layer), {@code zero=1} (ZeRO stage 1), {@code save=STEP:FILE} (the root checkpoints after that step, training goes
 * on), {@code resume=FILE} (every rank loads it and continues from its position), {@code diverge=STEP}
 * (after that step rank 1 adds 0.5 to its second parameter and prints its name). Each rank seeds DJL's random numbers differently, so only the trainer's broadcast makes
 * their parameters the same. Then checks {@link DistributedArrays#averageAll} and prints {@code OK}.
 */
public final class DjlWorker {

    static final int FEATURES = 8;
    static final int CLASSES = 4;

    public static void main(String[] args) {
        WorkerProcess.main(() -> {
            String mode = args[0];
            int batch = Integer.parseInt(args[1]);
            int steps = Integer.parseInt(args[2]);
            int accumulation = Integer.parseInt(args[3]);
            Path out = Path.of(args[4]);
            Map<String, String> options = new HashMap<>();
            for (int i = 5; i < args.length; i++) {
                options.put(args[i].substring(0, args[i].indexOf('=')), args[i].substring(args[i].indexOf('=') + 1));
            }
            int epochs = Integer.parseInt(options.getOrDefault("epochs", "1"));
            boolean shuffle = Boolean.parseBoolean(options.getOrDefault("shuffle", "false"));
            Engine engine = DjlEngines.load("PyTorch"); // before any other DJL call: see DjlEngines
            try (DistributedBackend backend = backend();
                    NDManager manager = NDManager.newBaseManager()) {
                backend.initialize();
                engine.setRandomSeed(1000 + 17 * backend.rank());
                int world = backend.worldSize();
                int records = batch * world * steps * accumulation;
                DistributedSampler sampler = new DistributedSampler(backend, batch, shuffle, 7);
                ArrayDataset data = dataset(manager, records, sampler);
                try (Model model = Model.newInstance("mlp")) {
                    model.setBlock(
                            Boolean.parseBoolean(options.getOrDefault("batchnorm", "false")) ? withBatchNorm() : mlp());
                    DefaultTrainingConfig config = new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                            .optOptimizer(optimizer(options.getOrDefault("optimizer", "sgd")));
                    DistributedTrainer.Options averaging = new DistributedTrainer.Options()
                            .accumulation(accumulation)
                            .gradCompression(options.getOrDefault("compression", "none"))
                            .zeroStage(Integer.parseInt(options.getOrDefault("zero", "0")));
                    if (options.containsKey("clipEvery")) {
                        averaging.clipGradNorm(Double.parseDouble(options.get("clipEvery")));
                    }
                    try (DistributedTrainer trainer = DistributedTrainer.of(backend, model, config, averaging)) {
                        trainer.initialize(new Shape(batch, FEATURES));
                        List<TrainingSteps.Step> marked = new java.util.concurrent.CopyOnWriteArrayList<>();
                        try (AutoCloseable observing = TrainingSteps.observe(marked::add)) {
                            if (mode.equals("fit")) {
                                EasyTrain.fit(trainer, 1, data, null);
                            } else {
                                loop(trainer, data, sampler, epochs, steps * accumulation, options);
                            }
                        }
                        // Each update is a step the trainer marked: backward's start (the gradient
                        // collector), the averaging and the optimizer's step.
                        if (marked.isEmpty()
                                || marked.stream()
                                        .anyMatch(m -> m.backwardNanos() <= 0
                                                || m.averageNanos() <= 0
                                                || m.rank() != backend.rank())) {
                            throw new IllegalStateException("the trainer's steps were not marked whole: " + marked);
                        }
                        CheckpointFile.awaitWrites(); // a checkpoint saved in the background is durable
                        if (backend.isRootWorker()) {
                            writeParameters(model, out);
                        }
                        System.out.println("optimizer state for "
                                + OptimizerState.parameterIds(trainer.optimizer())
                                        .size() + " of "
                                + model.getBlock().getParameters().size() + " parameters");
                    }
                }
                NDArray mine = manager.create(new float[] {backend.rank() + 1f, 10f * (backend.rank() + 1)});
                NDArray avg = DistributedArrays.averageAll(backend, mine);
                float expected = (world + 1) / 2f;
                if (avg.getFloat(0) != expected
                        || avg.getFloat(1) != 10 * expected
                        || mine.getFloat(0) != backend.rank() + 1f) {
                    throw new AssertionError("averageAll gave " + avg + " from " + mine);
                }
                System.out.println("OK rank " + backend.rank());
            }
        });
    }

    /** The MLP every worker trains: 8-32-4. */
    static SequentialBlock mlp() {
        return new SequentialBlock()
                .add(Linear.builder().setUnits(32).build())
                .add(Activation::relu)
                .add(Linear.builder().setUnits(CLASSES).build());
    }

    /** {@link #mlp()} with a BatchNorm after its first layer: running statistics, which take no gradient. */
    static SequentialBlock withBatchNorm() {
        return new SequentialBlock()
                .add(Linear.builder().setUnits(32).build())
                .add(ai.djl.nn.norm.BatchNorm.builder().build())
                .add(Activation::relu)
                .add(Linear.builder().setUnits(CLASSES).build());
    }

    /** The root's parameters, in block order, one value per line into {@code out}. */
    static void writeParameters(Model model, Path out) throws java.io.IOException {
        List<String> lines = new ArrayList<>();
        for (Parameter p : model.getBlock().getParameters().values()) {
            for (float v : p.getArray().toFloatArray()) {
                lines.add(Float.toString(v));
            }
        }
        Files.write(out, lines);
    }

    /** The engine {@code COHORT_BACKEND} names (shm in some tests); tcp by default. */
    static DistributedBackend backend() {
        return Backends.select(System.getenv().getOrDefault(Backends.ENV_BACKEND, "tcp"));
    }

    static Optimizer optimizer(String name) {
        return switch (name) {
            case "sgd" ->
                Optimizer.sgd().setLearningRateTracker(Tracker.fixed(0.1f)).build();
            case "momentum" ->
                Optimizer.sgd()
                        .setLearningRateTracker(Tracker.fixed(0.1f))
                        .optMomentum(0.9f)
                        .build();
            case "adam" ->
                Optimizer.adam().optLearningRateTracker(Tracker.fixed(0.01f)).build();
            default -> throw new IllegalArgumentException("optimizer " + name);
        };
    }

    /** The hand-written loop: {@code epochs} epochs of {@code batchesPerEpoch} batches, with the checkpoint options. */
    private static void loop(
            DistributedTrainer trainer,
            ArrayDataset data,
            DistributedSampler sampler,
            int epochs,
            int batchesPerEpoch,
            Map<String, String> options)
            throws Exception {
        TrainingPosition position = TrainingPosition.start();
        if (options.containsKey("resume")) {
            position = Checkpoints.load(Path.of(options.get("resume")), trainer);
            sampler.resumeAt(position);
            System.out.println("RESUMED AT " + position);
        }
        SaveAt save = SaveAt.of(options);
        long step = position.step();
        for (int epoch = position.epoch(); epoch < epochs; epoch++) {
            if (epoch != position.epoch()) {
                sampler.setEpoch(epoch);
            }
            int batch = epoch == position.epoch() ? position.batchInEpoch() : 0;
            for (Batch b : trainer.iterateDataset(data)) {
                if (options.containsKey("clip")) {
                    clippedStep(trainer, b, Double.parseDouble(options.get("clip")));
                } else {
                    trainStep(trainer, b);
                }
                b.close();
                batch++;
                step++;
                if (Long.toString(step).equals(options.get("diverge"))
                        && trainer.backend().rank() == 1) {
                    Parameter changed =
                            trainer.getModel().getBlock().getParameters().valueAt(1);
                    changed.getArray().addi(0.5f);
                    System.out.println("CHANGED "
                            + trainer.getModel().getBlock().getParameters().keyAt(1) + " after step " + step);
                }
                // Every rank where the optimizer state is sharded: each sends the root its share.
                if (step == save.step() && (trainer.backend().isRootWorker() || trainer.shardsOptimizerState())) {
                    TrainingPosition at = batch == batchesPerEpoch
                            ? new TrainingPosition(epoch + 1, 0, step)
                            : new TrainingPosition(epoch, batch, step);
                    if (save.async()) {
                        Checkpoints.saveAsync(save.file(), trainer, at, null);
                    } else {
                        Checkpoints.save(save.file(), trainer, at);
                    }
                }
            }
        }
    }

    /**
     * The {@code save=STEP:FILE} option: after which step the root checkpoints, and where (step -1:
     * never); with {@code async=true}, in the background.
     */
    record SaveAt(long step, Path file, boolean async) {
        static SaveAt of(Map<String, String> options) {
            if (!options.containsKey("save")) {
                return new SaveAt(-1, null, false);
            }
            String[] at = options.get("save").split(":", 2);
            return new SaveAt(
                    Long.parseLong(at[0]),
                    Path.of(at[1]),
                    Boolean.parseBoolean(options.getOrDefault("async", "false")));
        }
    }

    /** One training step on {@code b}: forward, backward, then the trainer's step. */
    static void trainStep(DistributedTrainer trainer, Batch b) {
        try (GradientCollector collector = trainer.newGradientCollector()) {
            NDArray pred = trainer.forward(b.getData()).singletonOrThrow();
            collector.backward(trainer.getLoss().evaluate(b.getLabels(), new NDList(pred)));
        }
        trainer.step();
    }

    /** The largest norm {@link DistributedTrainer#clipGradNorm} returned: the worker checks that clipping happened. */
    private static double largestNorm;

    /** {@link #trainStep}, with the averaged gradients clipped to {@code maxNorm} before the update. */
    static void clippedStep(DistributedTrainer trainer, Batch b, double maxNorm) {
        try (GradientCollector collector = trainer.newGradientCollector()) {
            NDArray pred = trainer.forward(b.getData()).singletonOrThrow();
            collector.backward(trainer.getLoss().evaluate(b.getLabels(), new NDList(pred)));
        }
        largestNorm = Math.max(largestNorm, trainer.clipGradNorm(maxNorm));
        trainer.step();
        if (largestNorm <= maxNorm) {
            System.out.println("no step clipped so far: largest norm " + largestNorm);
        }
    }

    /** The {@link #synthetic} examples as a DJL dataset that {@code sampler} shards. */
    static ArrayDataset dataset(NDManager manager, int records, DistributedSampler sampler) {
        Synthetic data = synthetic(records);
        float[] y = new float[records];
        for (int r = 0; r < records; r++) {
            y[r] = data.labels()[r];
        }
        return new ArrayDataset.Builder()
                .setData(manager.create(data.features(), new Shape(records, FEATURES)))
                .optLabels(manager.create(y, new Shape(records)))
                .setSampling(sampler)
                .build();
    }

    /** {@code records} examples of {@link #FEATURES} features, row after row, and their classes. */
    record Synthetic(float[] features, int[] labels) {}

    /** {@code records} inputs from a fixed seed, labelled by a fixed random linear map's largest output. */
    static Synthetic synthetic(int records) {
        Random random = new Random(42);
        float[] x = new float[records * FEATURES];
        float[] w = new float[FEATURES * CLASSES];
        for (int i = 0; i < w.length; i++) {
            w[i] = (float) random.nextGaussian();
        }
        int[] y = new int[records];
        for (int r = 0; r < records; r++) {
            float best = Float.NEGATIVE_INFINITY;
            for (int f = 0; f < FEATURES; f++) {
                x[r * FEATURES + f] = (float) random.nextGaussian();
            }
            for (int c = 0; c < CLASSES; c++) {
                float s = 0;
                for (int f = 0; f < FEATURES; f++) {
                    s += x[r * FEATURES + f] * w[f * CLASSES + c];
                }
                if (s > best) {
                    best = s;
                    y[r] = c;
                }
            }
        }
        return new Synthetic(x, y);
    }
}
