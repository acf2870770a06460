package dev.cohort.examples;

import static org.bytedeco.pytorch.global.torch.cross_entropy;

import dev.cohort.api.DistributeRequest;
import dev.cohort.api.Distributed;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.ProgressReporter;
import dev.cohort.api.checkpoint.TrainingPosition;
import dev.cohort.libtorch.LibTorch;
import dev.cohort.runtime.elastic.ElasticJob;
import dev.cohort.torch.Checkpoints;
import dev.cohort.torch.DistributedOptimizer;
import dev.cohort.torch.MiniBatch;
import dev.cohort.torch.ShardedLoader;
import dev.cohort.torch.TensorSamples;
import dev.cohort.torch.TorchCollectives;
import dev.cohort.torch.TorchDistributor;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.Locale;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.LongOptional;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Optimizer;
import org.bytedeco.pytorch.OptimizerParamGroupVector;
import org.bytedeco.pytorch.SGD;
import org.bytedeco.pytorch.SGDOptions;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * The training function of {@link FashionMnistTrainer}, on an initialized backend: what every worker
 * runs, written the way a data-parallel training script is written (the seed's pattern).
 *
 * <ol>
 *   <li>{@code checkBatchSize} with the global batch (per-worker batch times workers);</li>
 *   <li>build the model, the SGD optimizer and a shuffling loader over the whole training set;</li>
 *   <li>{@code distribute}: the root's weights go to every worker, the optimizer averages
 *       gradients before each step, the loader yields this worker's shard;</li>
 *   <li>with {@code --resume}, every worker loads the latest checkpoint (the same file);</li>
 *   <li>each step: forward, loss, backward, step, and {@code averageAll} of the loss for the log;</li>
 *   <li>after each epoch: test accuracy (each worker scores its slice of the test set and the
 *       correct counts are averaged) and, on the root only, a checkpoint.</li>
 * </ol>
 * Only the root worker prints (each step's progress through {@link ProgressReporter}, which {@code cohort run}
 * shows as a live line) and writes files.
 */
public final class FashionMnistTraining {

    private static final int EVAL_BATCH = 1000;

    private final ElasticJob job;
    /** The current generation's backend (another after an elastic run re-formed its group). */
    private DistributedBackend backend;

    private final TrainingConfig config;
    private final PrintStream out;
    // What training holds across generations.
    private DistributeRequest<Classifier, Optimizer, ShardedLoader, Object> request;
    private Classifier trained;
    private Optimizer optimizer;
    private ShardedLoader shard;
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
        return new FashionMnistTraining(job, config, out).run(data);
    }

    private TrainingSummary run(FashionMnist data) {
        long started = System.nanoTime();
        int workers = backend.worldSize();
        backend.checkBatchSize(config.batchSize() * workers);
        LibTorch.load();
        torch.set_num_threads(config.threads());
        torch.manual_seed(config.seed());

        Tensor trainImages = images(data.train());
        Tensor trainLabels =
                Tensor.create(data.train().longLabels(), data.train().count());
        Tensor testImages = images(data.test());
        Tensor testLabels = Tensor.create(data.test().longLabels(), data.test().count());

        Classifier model = config.model().create();
        SGDOptions options = new SGDOptions(config.lr());
        options.momentum().put(config.momentum());
        Optimizer sgd = new SGD(model.parameters(), options);
        ShardedLoader loader =
                ShardedLoader.of(new TensorSamples(trainImages, trainLabels), config.batchSize(), true, config.seed());

        request = DistributeRequest.of(model, (Optimizer) sgd, loader, (Object) null)
                .withOption(TorchDistributor.GRAD_COMPRESSION, config.gradCompression())
                .withOption(TorchDistributor.ZERO_STAGE, config.zeroStage());
        distribute();
        return new TrainingLoop(job, config, out, new TrainingLoop.Framework() {
                    @Override
                    public String name() {
                        return "torch";
                    }

                    @Override
                    public String checkpointExtension() {
                        return "pt";
                    }

                    @Override
                    public int batchesPerEpoch() {
                        return shard.batchesPerEpoch();
                    }

                    @Override
                    public String describe() {
                        return String.format(
                                        Locale.ROOT,
                                        "training %s on %d worker(s) (%s): %d epochs, %d steps per epoch of "
                                                + "%d x %d examples, lr %s (%s), momentum %s, %d compute thread(s) per worker",
                                        config.model().label(),
                                        workers,
                                        backend.name(),
                                        config.epochs(),
                                        shard.batchesPerEpoch(),
                                        workers,
                                        config.batchSize(),
                                        config.lr(),
                                        config.schedule().label(),
                                        config.momentum(),
                                        config.threads())
                                + (config.gradCompression().equals("none")
                                        ? ""
                                        : ", gradients sent as " + config.gradCompression())
                                + (config.zeroStage() == 0 ? "" : ", ZeRO stage " + config.zeroStage());
                    }

                    @Override
                    public TrainingLoop.Steps epoch(int epoch, int firstBatch) {
                        return steps(shard, epoch, firstBatch);
                    }

                    @Override
                    public void release() {
                        if (optimizer instanceof DistributedOptimizer d) {
                            d.release();
                        }
                    }

                    @Override
                    public TrainingLoop.Steps regroup(
                            DistributedBackend now, int epoch, long examplesDone, int batchSize, double scale) {
                        backend = now;
                        lrScale = scale;
                        request =
                                request.withTrainingData(request.trainingData().withBatchSize(batchSize));
                        distribute();
                        ShardedLoader rest =
                                request.trainingData().sharded(now.worldSize(), now.rank(), false, examplesDone);
                        return steps(rest, epoch, 0);
                    }

                    @Override
                    public void joinAt(int batchSize, double scale) {
                        lrScale = scale;
                        request =
                                request.withTrainingData(request.trainingData().withBatchSize(batchSize));
                        shard = request.trainingData().sharded(backend.worldSize(), backend.rank(), false, 0);
                    }

                    private TrainingLoop.Steps steps(ShardedLoader loader, int epoch, int firstBatch) {
                        trained.train(true);
                        Iterator<MiniBatch> it = loader.epoch(epoch, firstBatch).iterator();
                        int count = loader.batchesPerEpoch() - firstBatch;
                        return TrainingLoop.steps(it, count, (next, step, totalSteps) -> {
                            // The scope frees the step's native temporaries at once (not at the next GC).
                            try (PointerScope scope = new PointerScope()) {
                                MiniBatch b = next.get();
                                setLearningRate(
                                        optimizer, lrScale * TrainingLoop.learningRate(config, step, totalSteps));
                                optimizer.zero_grad();
                                Tensor loss = cross_entropy(trained.forward(b.inputs()), b.targets());
                                loss.backward();
                                optimizer.step();
                                return new TrainingLoop.StepResult(
                                        TorchCollectives.averageAll(backend, loss)
                                                .item_float(),
                                        b.size());
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
                            if (config.zeroStage() > 0) {
                                Checkpoints.saveSharded(file, trained, optimizer, position);
                            } else {
                                Checkpoints.save(file, trained, optimizer, position);
                            }
                        }
                    }

                    @Override
                    public TrainingPosition load(Path file) {
                        return Checkpoints.load(file, trained, optimizer);
                    }
                })
                .run(started);
    }

    /** Distributes the model, optimizer and data on the current backend: the root's state to every worker. */
    private void distribute() {
        Distributed<Classifier, Optimizer, ShardedLoader, Object> distributed = backend.distribute(request);
        trained = distributed.model();
        optimizer = distributed.optimizer();
        shard = distributed.trainingData();
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
