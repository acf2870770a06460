package dev.cohort.examples;

import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.GradientCollector;
import ai.djl.training.dataset.ArrayDataset;
import ai.djl.training.dataset.Batch;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import ai.djl.translate.TranslateException;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.checkpoint.TrainingPosition;
import dev.cohort.djl.Checkpoints;
import dev.cohort.djl.DistributedArrays;
import dev.cohort.djl.DistributedSampler;
import dev.cohort.djl.DistributedTrainer;
import dev.cohort.djl.DjlEngines;
import dev.cohort.runtime.elastic.ElasticJob;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.Locale;
import java.util.Set;

/**
 * The demo's training through DJL (its PyTorch engine) instead of JavaCPP's PyTorch: the same
 * models, data, optimizer, schedule and summary as {@link FashionMnistTraining}, written the way a
 * DJL program is, with Cohort's {@link DistributedTrainer} and {@link DistributedSampler}. DJL loads
 * its own libtorch, so the backend must be one that loads none (tcp, shm).
 */
public final class DjlFashionMnistTraining {

    /** Kept reachable: java.util.logging holds its loggers weakly, and a collected logger forgets its level. */
    private static final java.util.logging.Logger DJL_LOG = java.util.logging.Logger.getLogger("ai.djl");

    private static final java.util.logging.Logger DJL_GPU_PROBE =
            java.util.logging.Logger.getLogger("ai.djl.util.cuda");

    /**
     * DJL's own log lines down to warnings (its engine start-up logs several at INFO on every
     * rank), and none from its GPU probe, which warns on every CPU-only host.
     */
    public static void quietDjl() {
        DJL_LOG.setLevel(java.util.logging.Level.WARNING);
        DJL_GPU_PROBE.setLevel(java.util.logging.Level.OFF);
    }

    /**
     * Engines that load JavaCPP's libtorch, which cannot share a process with DJL's (hier does only
     * with {@code --hier-between gloo}, and then says so itself).
     */
    static final Set<String> LOADING_LIBTORCH = Set.of("gloo");

    private static final int EVAL_BATCH = 1000;

    private final ElasticJob job;
    private final DistributedBackend backend;
    private final TrainingConfig config;
    private final PrintStream out;

    private DjlFashionMnistTraining(ElasticJob job, TrainingConfig config, PrintStream out) {
        this.job = job;
        this.backend = job.backend();
        this.config = config;
        this.out = out;
    }

    /**
     * Fails at once, before anything native loads, when {@code backend} is an engine that loads
     * JavaCPP's libtorch: DJL's PyTorch engine loads its own build, and two cannot share a process.
     */
    static void checkBackend(String backend) {
        if (LOADING_LIBTORCH.contains(backend)) {
            throw new IllegalArgumentException("--framework djl cannot run on the " + backend + " engine: it loads "
                    + "JavaCPP's libtorch, DJL's PyTorch engine loads its own, and two libtorch builds cannot share a "
                    + "process; use --distributed-backend tcp (any hosts), shm (one host, JDK >= 22) or hier (shm within hosts, "
                    + "tcp between them)");
        }
    }

    /**
     * Loads DJL's PyTorch engine (offline: its natives come from the class path) with
     * {@code threads} compute threads. Call it before choosing the backend: with DJL's libtorch
     * loaded, engines that would load JavaCPP's report themselves unavailable, and {@code auto}
     * passes over them.
     */
    public static Engine loadEngine(int threads) {
        quietDjl();
        System.setProperty("ai.djl.offline", "true");
        System.setProperty("ai.djl.pytorch.num_threads", Integer.toString(threads));
        System.setProperty("ai.djl.pytorch.num_interop_threads", "1");
        return DjlEngines.load("PyTorch");
    }

    /** Trains on {@code data} with the job's initialized backend; the summary is the same on every worker. */
    public static TrainingSummary train(ElasticJob job, TrainingConfig config, FashionMnist data, PrintStream out) {
        checkBackend(job.backend().name());
        return new DjlFashionMnistTraining(job, config, out).run(data);
    }

    private TrainingSummary run(FashionMnist data) {
        long started = System.nanoTime();
        int workers = backend.worldSize();
        backend.checkBatchSize(config.batchSize() * workers);
        Engine engine = loadEngine(config.threads());
        engine.setRandomSeed((int) config.seed());
        boolean cnn = config.model() == Classifier.Kind.CNN;
        try (NDManager manager = engine.newBaseManager();
                Model model = Model.newInstance("fashion-mnist", engine.getEngineName())) {
            Shape image = cnn ? new Shape(1, FashionMnist.ROWS, FashionMnist.COLUMNS) : new Shape(FashionMnist.PIXELS);
            NDArray trainX = manager.create(
                    data.train().normalizedPixels(), prepend(data.train().count(), image));
            NDArray trainY = manager.create(labels(data.train()));
            NDArray testX = manager.create(
                    data.test().normalizedPixels(), prepend(data.test().count(), image));
            NDArray testY = manager.create(labels(data.test()));
            DistributedSampler sampler = new DistributedSampler(backend, config.batchSize(), true, config.seed());
            ArrayDataset train = new ArrayDataset.Builder()
                    .setData(trainX)
                    .optLabels(trainY)
                    .setSampling(sampler)
                    .build();
            int batches = (data.train().count() + workers - 1) / workers;
            int batchesPerEpoch = (batches + config.batchSize() - 1) / config.batchSize();
            long totalSteps = (long) config.epochs() * batchesPerEpoch;
            model.setBlock(cnn ? DjlModels.cnn() : DjlModels.mlp(512, 256));
            // DJL counts updates from 1 (restored with the optimizer's state on resume): update 1 is step 0.
            Tracker schedule = numUpdate -> (float) TrainingLoop.learningRate(config, numUpdate - 1, totalSteps);
            DefaultTrainingConfig trainingConfig = new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                    .optOptimizer(Optimizer.sgd()
                            .setLearningRateTracker(schedule)
                            .optMomentum((float) config.momentum())
                            .build());
            try (DistributedTrainer trainer = DistributedTrainer.of(backend, model, trainingConfig)) {
                trainer.initialize(prepend(config.batchSize(), image));
                return new TrainingLoop(job, config, out, new TrainingLoop.Framework() {
                            @Override
                            public String name() {
                                return "djl";
                            }

                            @Override
                            public String checkpointExtension() {
                                return "djl";
                            }

                            @Override
                            public int batchesPerEpoch() {
                                return batchesPerEpoch;
                            }

                            @Override
                            public String describe() {
                                return String.format(
                                        Locale.ROOT,
                                        "training %s on %d worker(s) (%s) through DJL %s (%s %s): "
                                                + "%d epochs, %d steps per epoch of %d x %d examples, lr %s (%s), momentum %s, "
                                                + "%d compute thread(s) per worker",
                                        config.model().label(),
                                        workers,
                                        backend.name(),
                                        Engine.getDjlVersion(),
                                        engine.getEngineName(),
                                        engine.getVersion(),
                                        config.epochs(),
                                        batchesPerEpoch,
                                        workers,
                                        config.batchSize(),
                                        config.lr(),
                                        config.schedule().label(),
                                        config.momentum(),
                                        config.threads());
                            }

                            @Override
                            public TrainingLoop.Steps epoch(int epoch, int firstBatch) {
                                sampler.startAt(epoch, firstBatch);
                                Iterator<Batch> it;
                                try {
                                    it = trainer.iterateDataset(train).iterator();
                                } catch (IOException | TranslateException e) {
                                    throw new IllegalStateException(
                                            "reading the training batches failed: " + e.getMessage(), e);
                                }
                                int count = batchesPerEpoch() - firstBatch;
                                return TrainingLoop.steps(it, count, (next, step, totalSteps) -> {
                                    try (Batch b = next.get()) {
                                        double loss;
                                        try (GradientCollector collector = trainer.newGradientCollector()) {
                                            NDList predicted = trainer.forward(b.getData());
                                            NDArray batchLoss =
                                                    trainer.getLoss().evaluate(b.getLabels(), predicted);
                                            collector.backward(batchLoss);
                                            try (NDArray averaged = DistributedArrays.averageAll(backend, batchLoss)) {
                                                loss = averaged.getFloat();
                                            }
                                        }
                                        trainer.step();
                                        return new TrainingLoop.StepResult(loss, b.getSize());
                                    }
                                });
                            }

                            @Override
                            public double evaluate() {
                                return DjlFashionMnistTraining.this.evaluate(trainer, testX, testY);
                            }

                            @Override
                            public void save(Path file, TrainingPosition position) {
                                Checkpoints.save(file, trainer, position);
                            }

                            @Override
                            public TrainingPosition load(Path file) {
                                return Checkpoints.load(file, trainer);
                            }
                        })
                        .run(started);
            }
        }
    }

    /** Accuracy on the whole test set: worker r scores the r-th slice, the counts are averaged over workers. */
    private double evaluate(DistributedTrainer trainer, NDArray images, NDArray labels) {
        long n = images.getShape().get(0);
        int workers = backend.worldSize();
        int rank = backend.rank();
        long from = n * rank / workers;
        long to = n * (rank + 1) / workers;
        long correct = 0;
        for (long i = from; i < to; i += EVAL_BATCH) {
            long end = Math.min(to, i + EVAL_BATCH);
            try (NDManager scope = images.getManager().newSubManager()) {
                NDArray x = images.get(i + ":" + end);
                NDArray y = labels.get(i + ":" + end);
                x.attach(scope);
                y.attach(scope);
                NDArray predicted =
                        trainer.evaluate(new NDList(x)).singletonOrThrow().argMax(1);
                predicted.attach(scope);
                correct += predicted
                        .toType(ai.djl.ndarray.types.DataType.INT64, false)
                        .eq(y.toType(ai.djl.ndarray.types.DataType.INT64, false))
                        .sum()
                        .getLong();
            }
        }
        double[] counts = backend.averageAll(new double[] {correct, to - from});
        return counts[0] / counts[1];
    }

    private static Shape prepend(long n, Shape shape) {
        return new Shape(n).addAll(shape);
    }

    private static float[] labels(FashionMnist.Split split) {
        float[] y = new float[split.count()];
        byte[] raw = split.labels();
        for (int i = 0; i < y.length; i++) {
            y[i] = raw[i];
        }
        return y;
    }
}
