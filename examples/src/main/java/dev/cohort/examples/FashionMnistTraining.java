package dev.cohort.examples;

import static org.bytedeco.pytorch.global.torch.cross_entropy;

import dev.cohort.api.DistributeRequest;
import dev.cohort.api.Distributed;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.JobEnvironment;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.LaunchEnvironment;
import dev.cohort.api.ProgressReporter;
import dev.cohort.libtorch.LibTorch;
import dev.cohort.torch.Batch;
import dev.cohort.torch.Checkpoints;
import dev.cohort.torch.DataLoader;
import dev.cohort.torch.TensorDataset;
import dev.cohort.torch.TorchCollectives;
import dev.cohort.torch.TrainingPosition;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
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

    private static final Pattern CHECKPOINT_NAME = Pattern.compile("checkpoint-step-(\\d+)\\.pt");
    private static final int CHECKPOINTS_KEPT = 2;
    private static final int EVAL_BATCH = 1000;
    private static final PrintStream NO_OUTPUT = new PrintStream(java.io.OutputStream.nullOutputStream());

    private final DistributedBackend backend;
    private final TrainingConfig config;
    private final PrintStream out;
    private final boolean root;

    private FashionMnistTraining(DistributedBackend backend, TrainingConfig config, PrintStream out) {
        this.backend = backend;
        this.config = config;
        this.out = out;
        this.root = backend.isRootWorker();
    }

    /**
     * Trains on {@code data} with {@code backend} (already initialized) and returns the summary
     * (the same on every worker). Prints progress to {@code out} on the root worker only.
     *
     * @throws IllegalArgumentException when the batch cannot be split among the workers
     */
    public static TrainingSummary train(DistributedBackend backend, TrainingConfig config, FashionMnist data,
                                        PrintStream out) {
        return new FashionMnistTraining(backend, config, out).run(data);
    }

    @SuppressWarnings("try")   // scopes and guards act by existing, not by being referenced
    private TrainingSummary run(FashionMnist data) {
        long started = System.nanoTime();
        int workers = backend.worldSize();
        int globalBatch = config.batchSize() * workers;
        backend.checkBatchSize(globalBatch);
        LibTorch.load();
        torch.set_num_threads(config.threads());
        torch.manual_seed(config.seed());

        Tensor trainImages = images(data.train());
        Tensor trainLabels = Tensor.create(data.train().longLabels(), data.train().count());
        Tensor testImages = images(data.test());
        Tensor testLabels = Tensor.create(data.test().longLabels(), data.test().count());

        Classifier model = config.model().create();
        SGDOptions options = new SGDOptions(config.lr());
        options.momentum().put(config.momentum());
        Optimizer sgd = new SGD(model.parameters(), options);
        DataLoader loader = DataLoader.of(new TensorDataset(trainImages, trainLabels), config.batchSize(), true,
                config.seed());

        Distributed<Classifier, Optimizer, DataLoader, Object> distributed =
                backend.distribute(DistributeRequest.of(model, sgd, loader, null));
        model = distributed.model();
        Optimizer optimizer = distributed.optimizer();
        DataLoader shard = distributed.trainingData();
        int batches = shard.batchesPerEpoch();

        TrainingPosition position = TrainingPosition.start();
        boolean resumed = false;
        if (config.resume()) {
            Optional<Path> latest = latestCheckpoint(config.checkpointDir());
            if (latest.isPresent()) {
                position = Checkpoints.load(latest.get(), model, optimizer);
                resumed = true;
                say("resuming from " + latest.get() + ": epoch " + (position.epoch() + 1) + ", step "
                        + (position.batchInEpoch() + 1) + " of " + batches + " (" + position.step() + " steps done)");
            } else {
                say("no checkpoint in " + config.checkpointDir() + "; starting from scratch");
            }
        }
        say(String.format(Locale.ROOT, "training %s on %d worker(s) (%s): %d epochs, %d steps per epoch of %d x %d "
                        + "examples, lr %s (%s), momentum %s, %d compute thread(s) per worker",
                config.model().label(), workers, backend.name(), config.epochs(), batches, workers,
                config.batchSize(), config.lr(), config.schedule().label(), config.momentum(), config.threads()));

        List<Double> accuracies = new ArrayList<>();
        // Every worker reads the history, as every worker loads the checkpoint: the summary is the same everywhere.
        List<TrainingSummary.EpochResult> epochResults = new ArrayList<>(resumed
                ? EpochHistory.read(config.checkpointDir(), position.epoch(), root ? out : NO_OUTPUT)
                : List.of());
        long step = position.step();
        long resumedFrom = position.step();
        int restarts = restartCount(JobEnvironment.currentVariables());
        ProgressMarker.State progressState = initialProgress(position.step(), resumed, restarts);
        FaultDrill drill = FaultDrill.fromEnvironment();
        double lastLoss = Double.NaN;
        double accuracy = Double.NaN;
        long trainedSamples = 0;
        long trainNanos = 0;
        boolean stoppedEarly = false;
        int epoch = position.epoch();
        int batch = position.batchInEpoch();
        double epochsTrained = epoch + (double) batch / batches;
        try (ProgressReporter progress = root ? ProgressReporter.to(out, System.getenv()) : ProgressReporter.silent();
             ProgressMarker marker = root && config.checkpointDir() != null
                     ? ProgressMarker.open(config.checkpointDir(), progressState) : null) {
            for (; epoch < config.epochs() && !stoppedEarly; epoch++, batch = 0) {
                if (reachedMaxSteps(step)) {
                    stoppedEarly = true;
                    break;
                }
                model.train(true);
                if (batch > 0) {
                    say(String.format(Locale.ROOT, "epoch %d/%d: resuming at step %d of %d", epoch + 1,
                            config.epochs(), batch + 1, batches));
                }
                progress.start(String.format(Locale.ROOT, "epoch %d/%d", epoch + 1, config.epochs()), batches, "steps");
                long epochStart = System.nanoTime();
                long epochSamples = 0;
                long epochSteps = 0;
                double epochLossSum = 0;
                Iterator<Batch> it = shard.epoch(epoch, batch).iterator();
                while (it.hasNext()) {
                    if (reachedMaxSteps(step)) {
                        stoppedEarly = true;
                        break;
                    }
                    // The scope frees the step's native temporaries at once (not at the next GC).
                    try (PointerScope scope = new PointerScope()) {
                        Batch b = it.next();
                        setLearningRate(optimizer, learningRate(step, (long) config.epochs() * batches));
                        optimizer.zero_grad();
                        Tensor loss = cross_entropy(model.forward(b.inputs()), b.targets());
                        loss.backward();
                        optimizer.step();
                        lastLoss = TorchCollectives.averageAll(backend, loss).item_float();
                        epochSamples += b.size();
                    }
                    epochSteps++;
                    epochLossSum += lastLoss;
                    step++;
                    batch++;
                    progressState = progressState.completed(step);
                    if (marker != null) {
                        marker.write(progressState);
                    }
                    drill.maybeFail(step, backend.rank());
                    double seconds = (System.nanoTime() - epochStart) / 1e9;
                    // Every worker runs batches of the same size, so this worker's rate times the workers.
                    double rate = epochSamples * workers / seconds;
                    double stepLoss = lastLoss;
                    progress.update(batch, () -> String.format(Locale.ROOT, "loss %.4f, %.0f samples/s", stepLoss, rate));
                    if (config.checkpointEvery() > 0 && step % config.checkpointEvery() == 0 && it.hasNext()) {
                        saveCheckpoint(model, optimizer, new TrainingPosition(epoch, batch, step));
                    }
                }
                long epochNanos = System.nanoTime() - epochStart;
                trainNanos += epochNanos;
                trainedSamples += epochSamples * workers;
                progress.finish();
                accuracy = evaluate(model, testImages, testLabels);
                epochsTrained = stoppedEarly ? epoch + (double) batch / batches : epoch + 1;
                if (!stoppedEarly) {
                    accuracies.add(accuracy);
                }
                if (epochSteps > 0) {
                    epochResults.add(new TrainingSummary.EpochResult(epoch + 1, epochsTrained, epochSteps,
                            epochLossSum / epochSteps, accuracy, epochSamples * workers / (epochNanos / 1e9),
                            epochNanos / 1e9));
                }
                // The history before the checkpoint: a run resumed from the checkpoint finds its epochs.
                if (root && config.checkpointDir() != null) {
                    EpochHistory.write(config.checkpointDir(), epochResults);
                }
                saveCheckpoint(model, optimizer, stoppedEarly ? new TrainingPosition(epoch, batch, step)
                        : new TrainingPosition(epoch + 1, 0, step));
                say(String.format(Locale.ROOT, "epoch %d/%d %s: loss %.4f, test accuracy %.4f",
                        epoch + 1, config.epochs(), stoppedEarly ? "stopped at --max-steps " + config.maxSteps()
                                : "done", lastLoss, accuracy));
            }
        }
        if (Double.isNaN(accuracy)) {
            accuracy = evaluate(model, testImages, testLabels);
        }
        double samplesPerSecond = trainNanos > 0 ? trainedSamples / (trainNanos / 1e9) : 0;
        TrainingSummary summary = new TrainingSummary(config.model().label(), backend.name(), workers, epochsTrained,
                step, globalBatch, accuracy, accuracies, lastLoss, samplesPerSecond,
                (System.nanoTime() - started) / 1e9, resumedFrom,
                config.checkpointDir() == null && restarts > 0 ? TrainingSummary.UNKNOWN : progressState.stepsRedone(),
                restarts, epochResults);
        say(summary.describe());
        return summary;
    }

    /**
     * Where the count of redone steps starts: from the progress marker next to the checkpoints when
     * this run continues an interrupted one (it resumed from a checkpoint, or the launcher restarted
     * the group), else afresh. The root reads the marker and every worker gets its values, so the
     * summary is the same everywhere.
     */
    private ProgressMarker.State initialProgress(long resumedStep, boolean resumed, int restarts) {
        Path dir = config.checkpointDir();
        ProgressMarker.State state = ProgressMarker.State.START;
        if (root && dir != null && (resumed || restarts > 0)) {
            state = ProgressMarker.read(dir, out).orElse(ProgressMarker.State.START);
        }
        long[] values = {Math.max(state.reachedStep(), resumedStep), state.stepsRedone()};
        backend.group().broadcast(DenseBuffer.of(values), DistributedBackend.ROOT_RANK).await();
        return new ProgressMarker.State(values[0], values[1]);
    }

    /** {@code COHORT_RESTART_COUNT}, set by the launcher: how often it restarted the group (0 when unset). */
    static int restartCount(java.util.Map<String, String> env) {
        String value = env.get(LaunchEnvironment.RESTART_COUNT);
        if (value == null || value.isBlank()) {
            return 0;
        }
        try {
            return Integer.parseInt(value.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(LaunchEnvironment.RESTART_COUNT + " must be a whole number, got '"
                    + value + "'");
        }
    }

    /**
     * The learning rate of step {@code step} of {@code totalSteps}: constant, or decaying linearly
     * from {@code --lr} to 0 over the planned steps. A function of the step alone, so a resumed run
     * continues the schedule where the checkpoint left it.
     */
    double learningRate(long step, long totalSteps) {
        return switch (config.schedule()) {
            case CONSTANT -> config.lr();
            case LINEAR -> config.lr() * Math.max(0.0, 1.0 - (double) step / totalSteps);
        };
    }

    private static void setLearningRate(Optimizer optimizer, double lr) {
        OptimizerParamGroupVector groups = optimizer.param_groups();
        for (long g = 0; g < groups.size(); g++) {
            groups.get(g).options().set_lr(lr);
        }
    }

    private boolean reachedMaxSteps(long step) {
        return config.maxSteps() > 0 && step >= config.maxSteps();
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

    @SuppressWarnings("try")
    private void saveCheckpoint(Classifier model, Optimizer optimizer, TrainingPosition position) {
        if (!root || config.checkpointDir() == null) {
            return;
        }
        Path dir = config.checkpointDir();
        Path file = dir.resolve(String.format(Locale.ROOT, "checkpoint-step-%09d.pt", position.step()));
        // The scope frees the archives and temporaries at once; left to the GC, the native memory they
        // hold piled up between old-generation collections (scripts/soak.sh: rank 0 grew ~1 MiB/s).
        try (PointerScope scope = new PointerScope()) {
            Checkpoints.save(file, model, optimizer, position);
        }
        try (Stream<Path> files = Files.list(dir)) {
            List<Path> old = files.filter(p -> CHECKPOINT_NAME.matcher(p.getFileName().toString()).matches())
                    .sorted(Comparator.comparingLong(FashionMnistTraining::checkpointStep).reversed())
                    .skip(CHECKPOINTS_KEPT).toList();
            for (Path p : old) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cleaning old checkpoints in " + dir + " failed: " + e.getMessage(), e);
        }
    }

    /** The checkpoint of the highest step in {@code dir}, if any. */
    static Optional<Path> latestCheckpoint(Path dir) {
        if (!Files.isDirectory(dir)) {
            return Optional.empty();
        }
        try (Stream<Path> files = Files.list(dir)) {
            return files.filter(p -> CHECKPOINT_NAME.matcher(p.getFileName().toString()).matches())
                    .max(Comparator.comparingLong(FashionMnistTraining::checkpointStep));
        } catch (IOException e) {
            throw new UncheckedIOException("listing checkpoints in " + dir + " failed: " + e.getMessage(), e);
        }
    }

    private static long checkpointStep(Path p) {
        Matcher m = CHECKPOINT_NAME.matcher(p.getFileName().toString());
        return m.matches() ? Long.parseLong(m.group(1)) : -1;
    }

    private static Tensor images(FashionMnist.Split split) {
        return Tensor.create(split.normalizedPixels(), split.count(), 1, FashionMnist.ROWS, FashionMnist.COLUMNS);
    }

    private void say(String line) {
        if (root) {
            out.println(line);
            out.flush();
        }
    }
}
