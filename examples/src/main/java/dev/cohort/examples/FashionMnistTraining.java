package dev.cohort.examples;

import static org.bytedeco.pytorch.global.torch.cross_entropy;

import dev.cohort.api.DistributeRequest;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.ProgressReporter;
import dev.cohort.api.checkpoint.TrainingPosition;
import dev.cohort.api.collective.ObjectCollectives;
import dev.cohort.data.DataPosition;
import dev.cohort.data.LoaderOptions;
import dev.cohort.data.ParquetDataset;
import dev.cohort.libtorch.LibTorch;
import dev.cohort.runtime.elastic.ElasticJob;
import dev.cohort.torch.Autocast;
import dev.cohort.torch.Checkpoints;
import dev.cohort.torch.DistributedOptimizer;
import dev.cohort.torch.MiniBatch;
import dev.cohort.torch.ParquetLoader;
import dev.cohort.torch.ShardedLoader;
import dev.cohort.torch.TensorSamples;
import dev.cohort.torch.TorchCollectives;
import dev.cohort.torch.TorchDistributor;
import dev.cohort.torch.TorchTraining;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Iterator;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.LongOptional;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Optimizer;
import org.bytedeco.pytorch.OptimizerParamGroupVector;
import org.bytedeco.pytorch.SGD;
import org.bytedeco.pytorch.SGDOptions;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * The training function of {@link FashionMnistTrainer}, on an initialized backend: what every worker
 * runs, written the way a data-parallel training script is written (the seed's pattern).
 *
 * <ol>
 *   <li>{@code checkBatchSize} with the global batch (per-worker batch times workers);</li>
 *   <li>build the model, the SGD optimizer and a shuffling loader over the whole training set (its
 *       tensors, or with {@code --data} a {@link ParquetLoader} streaming the Parquet shards);</li>
 *   <li>{@code distribute}: the root's weights go to every worker, the optimizer averages
 *       gradients before each step, the loader yields this worker's shard;</li>
 *   <li>with {@code --resume}, every worker loads the newest checkpoint any worker holds (the same
 *       file: {@code AgreedCheckpoint} sends it to workers whose own disk lacks it);</li>
 *   <li>each step: forward, loss, backward, step, and {@code averageAll} of the loss for the log;</li>
 *   <li>after each epoch: test accuracy (each worker scores its slice of the test set and the
 *       correct counts are averaged) and, on the root only, a checkpoint.</li>
 * </ol>
 * Only the root worker prints (each step's progress through {@link ProgressReporter}, which {@code cohort run}
 * shows as a live line) and writes files.
 */
public final class FashionMnistTraining {

    private static final int EVAL_BATCH = 1000;
    /** Examples each worker mixes its Parquet share through (about 12 MiB of pixels). */
    static final int PARQUET_SHUFFLE_BUFFER = 4096;

    private final ElasticJob job;
    /** The current generation's backend (another after an elastic run re-formed its group). */
    private DistributedBackend backend;

    private final TrainingConfig config;
    private final PrintStream out;
    // What training holds across generations.
    private DistributeRequest<Classifier, Optimizer, Object, Object> request;
    private Classifier trained;
    private DistributedOptimizer optimizer;
    /** This worker's shard: of the IDX tensors, or (with {@code --data}) of the Parquet files. */
    private ShardedLoader shard;

    private ParquetLoader parquet;
    /** The Parquet epoch being trained, and where a checkpoint said to go on in its epoch. */
    private ParquetLoader.Epoch parquetEpoch;

    private DataPosition resumeAt;
    /** Examples a Parquet batch holds on each worker (another after a re-form with --elastic-batch global). */
    private int parquetBatchSize;
    /** Where the Parquet epoch stood after the last step every worker finished (an elastic re-form goes on from it). */
    private DataPosition trainedTo;

    private double lrScale = 1.0;

    private FashionMnistTraining(ElasticJob job, TrainingConfig config, PrintStream out) {
        this.job = job;
        this.backend = job.backend();
        this.config = config;
        this.out = out;
    }

    /**
     * Trains on {@code data} with {@code backend} (already initialized) and returns the summary
     * (the same on every worker). Prints progress to {@code out} on the root worker only.
     *
     * @throws IllegalArgumentException when the batch cannot be split among the workers
     */
    public static TrainingSummary train(ElasticJob job, TrainingConfig config, FashionMnist data, PrintStream out) {
        return new FashionMnistTraining(job, config, out).run(data.train(), null, data.test());
    }

    /**
     * {@link #train(ElasticJob, TrainingConfig, FashionMnist, PrintStream)} from Parquet shards of
     * the training set ({@code Convert.idx}'s columns: {@code features}, 784 pixels in [0, 1], and
     * {@code label}), streamed through a {@link ParquetLoader}; {@code test} scores the accuracy.
     * Checkpoints carry the data position, so {@code --resume} goes on with the batches the saved
     * run had left.
     */
    public static TrainingSummary train(
            ElasticJob job, TrainingConfig config, ParquetDataset train, FashionMnist.Split test, PrintStream out) {
        checkWidth(train);
        return new FashionMnistTraining(job, config, out).run(null, train, test);
    }

    /** Refuses {@code --data} whose examples are not Fashion-MNIST's 784 pixels. */
    static void checkWidth(ParquetDataset train) {
        if (train.width() != FashionMnist.PIXELS) {
            throw new IllegalArgumentException("--data: its examples have " + train.width() + " features; "
                    + "Fashion-MNIST's images have " + FashionMnist.PIXELS + " (28 x 28)");
        }
    }

    /** Trains from {@code idxTrain}, or from {@code parquetTrain} where that is given; scores on {@code test}. */
    private TrainingSummary run(FashionMnist.Split idxTrain, ParquetDataset parquetTrain, FashionMnist.Split test) {
        try {
            return trainFrom(idxTrain, parquetTrain, test);
        } finally {
            if (parquetEpoch != null) {
                parquetEpoch.close();
            }
        }
    }

    private TrainingSummary trainFrom(
            FashionMnist.Split idxTrain, ParquetDataset parquetTrain, FashionMnist.Split test) {
        long started = System.nanoTime();
        int workers = backend.worldSize();
        backend.checkBatchSize(config.batchSize() * workers);
        LibTorch.load();
        torch.set_num_threads(config.threads());
        torch.manual_seed(config.seed());

        Tensor testImages = images(test);
        Tensor testLabels = Tensor.create(test.longLabels(), test.count());

        Classifier model = config.model().create();
        SGDOptions options = new SGDOptions(config.lr());
        options.momentum().put(config.momentum());
        Optimizer sgd = new SGD(model.parameters(), options);
        Object loader = parquetTrain != null
                ? parquetLoader(parquetTrain, config.batchSize())
                : ShardedLoader.of(
                        new TensorSamples(images(idxTrain), Tensor.create(idxTrain.longLabels(), idxTrain.count())),
                        config.batchSize(),
                        true,
                        config.seed());

        request = DistributeRequest.of(model, (Optimizer) sgd, loader, (Object) null)
                .withOption(TorchDistributor.GRAD_COMPRESSION, config.gradCompression())
                .withOption(TorchDistributor.ZERO_STAGE, config.zeroStage())
                .withOption(TorchDistributor.PRECISION, config.precision());
        distribute();
        if (job.joined() && parquet != null) {
            agreedPosition(); // the members' regroup agrees on one too
        }
        return new TrainingLoop(job, config, out, new TrainingLoop.Framework(TrainingLoop.Library.TORCH) {
                    @Override
                    public int batchesPerEpoch() {
                        return FashionMnistTraining.this.batchesPerEpoch();
                    }

                    @Override
                    public String gradients() {
                        return (config.gradCompression().equals("none")
                                        ? ""
                                        : ", gradients sent as " + config.gradCompression())
                                + (config.zeroStage() == 0 ? "" : ", ZeRO stage " + config.zeroStage())
                                + (config.precision().equals("fp32") ? "" : ", " + config.precision() + " compute");
                    }

                    @Override
                    public int parquetFiles() {
                        return parquet == null ? 0 : parquet.dataset().files().size();
                    }

                    @Override
                    public TrainingLoop.Steps epoch(int epoch, int firstBatch) {
                        if (parquet != null) {
                            return parquetSteps(epoch, firstBatch);
                        }
                        Iterator<MiniBatch> it = shard.epoch(epoch, firstBatch).iterator();
                        return steps(it, shard.batchesPerEpoch() - firstBatch);
                    }

                    /** This worker's Parquet batches of {@code epoch}: from its start, or from the checkpoint's position. */
                    private TrainingLoop.Steps parquetSteps(int epoch, int firstBatch) {
                        DataPosition from = DataPosition.start(epoch);
                        if (firstBatch > 0) {
                            if (resumeAt == null || resumeAt.epoch() != epoch) {
                                throw new IllegalStateException(
                                        "the checkpoint stopped at step " + (firstBatch + 1)
                                                + " of epoch " + (epoch + 1) + " but holds no data position for it"
                                                + " (saved by a run without --data?): resume it without --data, or start afresh");
                            }
                            from = resumeAt;
                        }
                        return parquetSteps(from);
                    }

                    /** This worker's Parquet batches from {@code from} on. */
                    private TrainingLoop.Steps parquetSteps(DataPosition from) {
                        if (parquetEpoch != null) {
                            parquetEpoch.close();
                        }
                        parquetEpoch = parquet.epoch(from);
                        trainedTo = from;
                        return steps(parquetEpoch.iterator(), parquetEpoch.steps());
                    }

                    @Override
                    public void release() {
                        optimizer.release();
                    }

                    @Override
                    public TrainingLoop.Steps regroup(
                            DistributedBackend now, int epoch, long examplesDone, int batchSize, double scale) {
                        backend = now;
                        lrScale = scale;
                        if (parquet != null) {
                            // The rest of the epoch from where the root's last finished step left it, re-split
                            // among the workers now (the failed step's examples included).
                            request = request.withTrainingData(parquetLoader(parquet.dataset(), batchSize));
                            distribute();
                            DataPosition from = agreedPosition();
                            return parquetSteps(from.epoch() == epoch ? from : DataPosition.start(epoch));
                        }
                        request = request.withTrainingData(idxLoader().withBatchSize(batchSize));
                        distribute();
                        ShardedLoader rest = idxLoader().sharded(now.worldSize(), now.rank(), false, examplesDone);
                        return steps(rest.epoch(epoch).iterator(), rest.batchesPerEpoch());
                    }

                    @Override
                    public void joinAt(int batchSize, double scale) {
                        lrScale = scale;
                        if (parquet != null) {
                            if (batchSize != parquetBatchSize) {
                                throw new UnsupportedOperationException("a worker joining a run with --data trains "
                                        + parquetBatchSize + " examples a batch, the members " + batchSize
                                        + ": use --elastic-batch per-worker with --data");
                            }
                            return; // distribute() sharded the loader among the workers now
                        }
                        request = request.withTrainingData(idxLoader().withBatchSize(batchSize));
                        shard = idxLoader().sharded(backend.worldSize(), backend.rank(), false, 0);
                    }

                    private TrainingLoop.Steps steps(Iterator<MiniBatch> it, int count) {
                        trained.train(true);
                        return TrainingLoop.steps(it, count, (next, step, totalSteps) -> {
                            // The scope frees the step's native temporaries at once (not at the next GC).
                            try (PointerScope scope = new PointerScope()) {
                                MiniBatch b = next.get();
                                setLearningRate(
                                        optimizer, lrScale * TrainingLoop.learningRate(config, step, totalSteps));
                                optimizer.zero_grad();
                                Tensor loss;
                                try (Autocast autocast = optimizer.autocast()) {
                                    loss = cross_entropy(trained.forward(inputs(b)), b.targets());
                                }
                                optimizer.scaleLoss(loss).backward();
                                optimizer.step();
                                float averaged = TorchCollectives.averageAll(backend, loss)
                                        .item_float();
                                if (parquetEpoch != null) {
                                    trainedTo = parquetEpoch.position();
                                }
                                return new TrainingLoop.StepResult(averaged, b.size());
                            }
                        });
                    }

                    @Override
                    public double evaluate() {
                        return FashionMnistTraining.this.evaluate(trained, testImages, testLabels);
                    }

                    @Override
                    public boolean savesOnEveryWorker() {
                        return config.zeroStage() > 0; // each worker writes its shard of the optimizer state
                    }

                    @Override
                    @SuppressWarnings("try")
                    public void save(Path file, TrainingPosition position) {
                        // The scope frees the archives and temporaries at once; left to the GC, the native memory they
                        // hold piled up between old-generation collections (scripts/soak.sh: rank 0 grew ~1 MiB/s).
                        try (PointerScope scope = new PointerScope()) {
                            // With --data, where the data stands after the last batch trained (the epoch's end at its
                            // end).
                            DataPosition data = parquetEpoch == null ? null : parquetEpoch.position();
                            if (config.zeroStage() > 0) {
                                Checkpoints.saveSharded(file, trained, optimizer, position, data);
                            } else {
                                Checkpoints.save(file, trained, optimizer, position, data);
                            }
                        }
                    }

                    @Override
                    public TrainingPosition load(Path file) {
                        Checkpoints.Loaded loaded = Checkpoints.loadWithData(file, trained, optimizer);
                        resumeAt = loaded.data();
                        return loaded.position();
                    }
                })
                .run(started);
    }

    /** An undistributed loader of {@code dataset}, {@code batchSize} examples a batch per worker. */
    private ParquetLoader parquetLoader(ParquetDataset dataset, int batchSize) {
        parquetBatchSize = batchSize;
        return ParquetLoader.of(
                dataset,
                new LoaderOptions().batchSize(batchSize).seed(config.seed()).shuffleBuffer(PARQUET_SHUFFLE_BUFFER));
    }

    /** The root's {@link #trainedTo} on every worker (a joiner, which has none, takes the root's). */
    private DataPosition agreedPosition() {
        byte[] root = ObjectCollectives.broadcastBytes(
                backend.group(),
                (trainedTo == null ? DataPosition.start(0) : trainedTo).toBytes(),
                DistributedBackend.ROOT_RANK);
        return DataPosition.fromBytes(root);
    }

    /** Distributes the model, optimizer and data on the current backend: the root's state to every worker. */
    private void distribute() {
        TorchTraining<Classifier, Object, Object> distributed = TorchTraining.distribute(backend, request);
        trained = distributed.model();
        optimizer = distributed.optimizer();
        if (distributed.trainingData() instanceof ParquetLoader p) {
            parquet = p;
        } else {
            shard = (ShardedLoader) distributed.trainingData();
        }
    }

    /** The IDX loader to shard anew in an elastic run (re-formed or joined); Parquet's is made anew. */
    private ShardedLoader idxLoader() {
        if (!(request.trainingData() instanceof ShardedLoader loader)) {
            throw new UnsupportedOperationException("an elastic run trains from the IDX files, not from --data");
        }
        return loader;
    }

    /**
     * This worker's batches in an epoch, the same on every worker: from Parquet, its share of the
     * examples (padded: {@code ceil(examples / workers)}) in batches of {@code --batch-size}.
     */
    private int batchesPerEpoch() {
        if (parquet == null) {
            return shard.batchesPerEpoch();
        }
        long workers = backend.worldSize();
        long perWorker = (parquet.dataset().examples() + workers - 1) / workers;
        return (int) ((perWorker + parquetBatchSize - 1) / parquetBatchSize);
    }

    /**
     * A batch's images as the model takes them: the IDX tensors are normalized already; Parquet's
     * pixels (in [0, 1], 784 a row) are normalized here as the IDX ones were.
     */
    private Tensor inputs(MiniBatch batch) {
        if (parquet == null) {
            return batch.inputs();
        }
        return batch.inputs()
                .sub_(new Scalar(FashionMnist.MEAN))
                .div_(new Scalar(FashionMnist.STD))
                .reshape(batch.size(), 1, FashionMnist.ROWS, FashionMnist.COLUMNS);
    }

    private static void setLearningRate(Optimizer optimizer, double lr) {
        OptimizerParamGroupVector groups = optimizer.param_groups();
        for (long g = 0; g < groups.size(); g++) {
            groups.get(g).options().set_lr(lr);
        }
    }

    /**
     * Accuracy on the whole test set: worker {@code r} of {@code n} scores the {@code r}-th
     * contiguous slice, and the correct and total counts are summed over workers (as averages
     * times {@code n}, which leaves the ratio unchanged).
     */
    @SuppressWarnings("try")
    private double evaluate(Classifier model, Tensor images, Tensor labels) {
        long n = images.size(0);
        int workers = backend.worldSize();
        int rank = backend.rank();
        long from = n * rank / workers;
        long to = n * (rank + 1) / workers;
        long correct = 0;
        model.eval();
        try (NoGradGuard noGrad = new NoGradGuard()) {
            for (long i = from; i < to; i += EVAL_BATCH) {
                try (PointerScope scope = new PointerScope()) {
                    long len = Math.min(EVAL_BATCH, to - i);
                    Tensor predicted = model.forward(images.narrow(0, i, len)).argmax(new LongOptional(1), false);
                    correct += predicted.eq(labels.narrow(0, i, len)).sum().item_long();
                }
            }
        }
        model.train(true);
        double[] counts = backend.averageAll(new double[] {correct, to - from});
        return counts[0] / counts[1];
    }

    private static Tensor images(FashionMnist.Split split) {
        return Tensor.create(split.normalizedPixels(), split.count(), 1, FashionMnist.ROWS, FashionMnist.COLUMNS);
    }
}
