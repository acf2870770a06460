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
import ai.djl.training.dataset.Dataset;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import ai.djl.translate.TranslateException;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.checkpoint.TrainingPosition;
import dev.cohort.data.DataPosition;
import dev.cohort.data.LoaderOptions;
import dev.cohort.data.ParquetDataset;
import dev.cohort.djl.Checkpoints;
import dev.cohort.djl.DistributedArrays;
import dev.cohort.djl.DistributedParquetDataset;
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
    /** The current generation's backend (another after an elastic run re-formed its group). */
    private DistributedBackend backend;

    private final TrainingConfig config;
    private final PrintStream out;
    /** The learning rate's factor (workers now over workers at the start, after a re-form with per-worker batches). */
    private double lrScale = 1;
    /** The learning rate of the step being trained. */
    private double learningRate;

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
        return new DjlFashionMnistTraining(job, config, out).run(data.train(), null, data.test());
    }

    /**
     * {@link #train(ElasticJob, TrainingConfig, FashionMnist, PrintStream)} from Parquet shards of
     * the training set (as {@code Convert.idx} writes them), streamed through a
     * {@link DistributedParquetDataset}; {@code test} scores the accuracy. Checkpoints carry the
     * data position, so {@code --resume} goes on with the batches the saved run had left.
     */
    public static TrainingSummary train(
            ElasticJob job, TrainingConfig config, ParquetDataset train, FashionMnist.Split test, PrintStream out) {
        checkBackend(job.backend().name());
        FashionMnistTraining.checkWidth(train);
        return new DjlFashionMnistTraining(job, config, out).run(null, train, test);
    }

    /** Trains from {@code idxTrain}, or from {@code parquetTrain} where that is given; scores on {@code test}. */
    private TrainingSummary run(FashionMnist.Split idxTrain, ParquetDataset parquetTrain, FashionMnist.Split test) {
        long started = System.nanoTime();
        int workers = backend.worldSize();
        backend.checkBatchSize(config.batchSize() * workers);
        Engine engine = loadEngine(config.threads());
        engine.setRandomSeed((int) config.seed());
        boolean cnn = config.model() == Classifier.Kind.CNN;
        try (NDManager manager = engine.newBaseManager();
                Model model = Model.newInstance("fashion-mnist", engine.getEngineName());
                DistributedParquetDataset parquet = parquetTrain == null
                        ? null
                        : DistributedParquetDataset.of(
                                parquetTrain,
                                new LoaderOptions()
                                        .batchSize(config.batchSize())
                                        .seed(config.seed())
                                        .shuffleBuffer(FashionMnistTraining.PARQUET_SHUFFLE_BUFFER))) {
            Shape image = cnn ? new Shape(1, FashionMnist.ROWS, FashionMnist.COLUMNS) : new Shape(FashionMnist.PIXELS);
            NDArray testX = manager.create(test.normalizedPixels(), prepend(test.count(), image));
            NDArray testY = manager.create(labels(test));
            NDArray trainX = parquet != null
                    ? null
                    : manager.create(idxTrain.normalizedPixels(), prepend(idxTrain.count(), image));
            NDArray trainY = parquet != null ? null : manager.create(labels(idxTrain));
            long examples = parquet != null ? parquetTrain.examples() : idxTrain.count();
            int startBatches = batches(examples, workers, config.batchSize());
            model.setBlock(cnn ? DjlModels.cnn() : DjlModels.mlp(512, 256));
            // The rate the loop's step and plan give (set before each update), as the torch demo's: the same on
            // members, joiners and a resumed run.
            Tracker schedule = numUpdate -> (float) learningRate;
            DefaultTrainingConfig trainingConfig = new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                    .optOptimizer(Optimizer.sgd()
                            .setLearningRateTracker(schedule)
                            .optMomentum((float) config.momentum())
                            .build());
            DistributedTrainer.Options averaging = new DistributedTrainer.Options()
                    .gradCompression(config.gradCompression())
                    .zeroStage(config.zeroStage());
            try (DistributedTrainer trainer = DistributedTrainer.of(backend, model, trainingConfig, averaging)) {
                trainer.initialize(prepend(config.batchSize(), image)); // every rank takes the root's parameters
                if (job.joined()) {
                    trainer.takeOptimizerState(); // as the members' regroup hands it over
                }
                return new TrainingLoop(job, config, out, new TrainingLoop.Framework(TrainingLoop.Library.DJL) {
                            private int batchesPerEpoch = startBatches;
                            private DistributedSampler sampler =
                                    new DistributedSampler(backend, config.batchSize(), true, config.seed());
                            private Dataset train = parquet != null ? parquet : idx(sampler);

                            /** The IDX examples, batched by {@code sampler}. */
                            private Dataset idx(DistributedSampler sampler) {
                                return new ArrayDataset.Builder()
                                        .setData(trainX)
                                        .optLabels(trainY)
                                        .setSampling(sampler)
                                        .build();
                            }

                            @Override
                            public int batchesPerEpoch() {
                                return batchesPerEpoch;
                            }

                            @Override
                            public void joinAt(int batchSize, double scale) {
                                if (parquet != null) {
                                    throw new UnsupportedOperationException(
                                            "an elastic DJL run trains from the IDX files, not from --data");
                                }
                                lrScale = scale;
                                sampler = new DistributedSampler(backend, batchSize, true, config.seed());
                                train = idx(sampler);
                                batchesPerEpoch = batches(examples, backend.worldSize(), batchSize);
                            }

                            @Override
                            public TrainingLoop.Steps regroup(
                                    DistributedBackend now, int epoch, long examplesDone, int batchSize, double scale) {
                                if (parquet != null) {
                                    throw new UnsupportedOperationException(
                                            "an elastic DJL run trains from the IDX files, not from --data");
                                }
                                backend = now;
                                lrScale = scale;
                                int afresh = trainer.regroup(now);
                                if (afresh > 0 && now.isRootWorker()) {
                                    out.println("the optimizer state of the lost worker's share (" + afresh
                                            + " parameter(s), ZeRO) starts afresh");
                                }
                                sampler = new DistributedSampler(now, batchSize, true, config.seed());
                                train = idx(sampler);
                                batchesPerEpoch = batches(examples, now.worldSize(), batchSize);
                                sampler.startAfter(epoch, examplesDone);
                                return steps(batches(Math.max(0, examples - examplesDone), now.worldSize(), batchSize));
                            }

                            @Override
                            public String computesWith() {
                                return String.format(
                                        Locale.ROOT,
                                        " through DJL %s (%s %s)",
                                        Engine.getDjlVersion(),
                                        engine.getEngineName(),
                                        engine.getVersion());
                            }

                            @Override
                            public int parquetFiles() {
                                return parquet == null
                                        ? 0
                                        : parquetTrain.files().size();
                            }

                            @Override
                            public TrainingLoop.Steps epoch(int epoch, int firstBatch) {
                                if (parquet == null) {
                                    sampler.startAt(epoch, firstBatch);
                                } else if (firstBatch == 0) {
                                    parquet.resumeAt(DataPosition.start(epoch));
                                } else if (parquet.position().epoch() != epoch) {
                                    throw new IllegalStateException("the checkpoint stopped at step " + (firstBatch + 1)
                                            + " of epoch " + (epoch + 1) + " but its data position is in epoch "
                                            + (parquet.position().epoch() + 1) + ": start afresh");
                                }
                                return steps(batchesPerEpoch() - firstBatch);
                            }

                            /** The next {@code count} batches the trainer iterates, each trained by one call. */
                            private TrainingLoop.Steps steps(int count) {
                                Iterator<Batch> it;
                                try {
                                    it = trainer.iterateDataset(train).iterator();
                                } catch (IOException | TranslateException e) {
                                    throw new IllegalStateException(
                                            "reading the training batches failed: " + e.getMessage(), e);
                                }
                                return TrainingLoop.steps(it, count, (next, step, totalSteps) -> {
                                    learningRate = lrScale * TrainingLoop.learningRate(config, step, totalSteps);
                                    try (Batch b = next.get()) {
                                        double loss;
                                        try (GradientCollector collector = trainer.newGradientCollector()) {
                                            NDList predicted =
                                                    trainer.forward(inputs(b.getData(), parquet != null, image));
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
                            public boolean savesOnEveryWorker() {
                                return trainer.shardsOptimizerState(); // each sends the root its share
                            }

                            @Override
                            public void save(Path file, TrainingPosition position) {
                                // With --data, where the data stands after the last batch trained.
                                Checkpoints.save(file, trainer, position, parquet);
                            }

                            @Override
                            public TrainingPosition load(Path file) {
                                return parquet == null
                                        ? Checkpoints.load(file, trainer)
                                        : Checkpoints.load(file, trainer, parquet);
                            }
                        })
                        .run(started);
            }
        }
    }

    /**
     * A batch's images as the model takes them: the IDX arrays are normalized and shaped already;
     * Parquet's pixels (in [0, 1], 784 a row) are normalized here as the IDX ones were, in the
     * batch's manager.
     */
    private static NDList inputs(NDList data, boolean fromParquet, Shape image) {
        if (!fromParquet) {
            return data;
        }
        NDArray x = data.singletonOrThrow();
        return new NDList(x.sub(FashionMnist.MEAN)
                .div(FashionMnist.STD)
                .reshape(prepend(x.getShape().get(0), image)));
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

    /** Each worker's batches in an epoch of {@code examples} among {@code workers}, {@code batch} examples a batch. */
    private static int batches(long examples, int workers, int batch) {
        long perWorker = (examples + workers - 1) / workers;
        return (int) ((perWorker + batch - 1) / batch);
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
