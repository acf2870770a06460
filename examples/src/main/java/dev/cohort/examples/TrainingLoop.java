package dev.cohort.examples;

import dev.cohort.api.DistributedBackend;
import dev.cohort.api.JobEnvironment;
import dev.cohort.api.LaunchEnvironment;
import dev.cohort.api.ProgressReporter;
import dev.cohort.api.checkpoint.AgreedCheckpoint;
import dev.cohort.api.checkpoint.TrainingPosition;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.runtime.elastic.ElasticJob;
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

/**
 * The demo's loop, whatever the framework trains: epochs of steps with live progress, test
 * accuracy after each epoch, and with {@code --checkpoint-dir} checkpoints (every
 * {@code --checkpoint-every} steps and after each epoch, by the root), {@code --resume} from the
 * latest, the count of redone steps ({@link ProgressMarker}), the epochs before a resume ({@link
 * EpochHistory}) and the fault drill ({@link FaultDrill}). The summary is the same on every worker.
 */
final class TrainingLoop {

    /**
     * The libraries a {@link Framework} trains with: the summary's {@code framework} and the
     * extension of its checkpoint files.
     */
    enum Library {
        TORCH("torch", "pt"),
        DJL("djl", "djl");

        final String label;
        final String checkpointExtension;

        Library(String label, String checkpointExtension) {
            this.label = label;
            this.checkpointExtension = checkpointExtension;
        }
    }

    /** What a framework supplies: its steps, its evaluation and its checkpoints. */
    abstract static class Framework {

        /** What it trains with. */
        final Library library;

        Framework(Library library) {
            this.library = library;
        }

        /** This worker's batches in one epoch (the same on every worker). */
        public abstract int batchesPerEpoch();

        /** What the plan line says after the engine, e.g. the library's version; nothing by default. */
        public String computesWith() {
            return "";
        }

        /** What the plan line says of how gradients travel, e.g. {@code ", ZeRO stage 1"}; nothing by default. */
        public String gradients() {
            return "";
        }

        /** The Parquet files the training examples stream from; 0 where they are in memory (the IDX files). */
        public abstract int parquetFiles();

        /** This worker's batches of {@code epoch}, from batch {@code firstBatch}. */
        public abstract Steps epoch(int epoch, int firstBatch);

        /** Test accuracy over the whole test set (each worker scores a slice), the same on every worker. */
        public abstract double evaluate();

        /** Saves a checkpoint (called on the root only, or on every worker where {@link #savesOnEveryWorker()}). */
        public abstract void save(Path file, TrainingPosition position);

        /** Whether every worker takes part in {@link #save} (a sharded optimizer state), not the root alone. */
        public boolean savesOnEveryWorker() {
            return false;
        }

        /** Loads a checkpoint (on every worker) and returns where to continue. */
        public abstract TrainingPosition load(Path file);

        /**
         * Before an elastic run's group is re-formed (a worker was lost): lets go of what lives in
         * the old group (gradient buckets in its memory). Nothing by default.
         */
        public void release() {}

        /**
         * In an elastic run's re-formed group on {@code backend}: every worker takes the root's
         * model and optimizer state, trains with {@code batchSize} examples per worker and the
         * learning rate times {@code lrScale} from now on, and gets its share of {@code epoch}'s
         * examples from the {@code examplesDone}-th of the epoch's order on.
         *
         * @throws UnsupportedOperationException where the framework cannot go on in a re-formed group
         */
        public Steps regroup(DistributedBackend backend, int epoch, long examplesDone, int batchSize, double lrScale) {
            throw new UnsupportedOperationException(
                    "the " + library.label + " trainer cannot go on in a re-formed group");
        }

        /**
         * In a worker that joined a running elastic job, after the root's state was distributed to
         * it: trains with {@code batchSize} examples per worker and the learning rate times
         * {@code lrScale}, as the members do (no collective).
         */
        public void joinAt(int batchSize, double lrScale) {
            throw new UnsupportedOperationException("the " + library.label + " trainer cannot join a running group");
        }
    }

    /** An epoch's remaining batches, each trained by one call. */
    interface Steps {

        boolean hasNext();

        /** How many batches are left. */
        int remaining();

        /** Trains the next batch as global step {@code step} (0-based) of {@code totalSteps}. */
        StepResult train(long step, long totalSteps);
    }

    /** A trained batch: the loss averaged over workers, and this worker's samples. */
    record StepResult(double loss, long samples) {}

    /** Trains one batch as global step {@code step} of {@code totalSteps}. */
    interface BatchStep<B> {
        /**
         * @param next gives the batch: call it once, inside whatever scope is to own the batch's memory
         */
        StepResult train(java.util.function.Supplier<B> next, long step, long totalSteps);
    }

    /** The {@code count} steps over {@code batches}, each batch trained by {@code train}. */
    static <B> Steps steps(Iterator<B> batches, int count, BatchStep<B> train) {
        return new Steps() {
            private int taken;

            @Override
            public boolean hasNext() {
                return batches.hasNext();
            }

            @Override
            public int remaining() {
                return count - taken;
            }

            @Override
            public StepResult train(long step, long totalSteps) {
                taken++;
                return train.train(batches::next, step, totalSteps);
            }
        };
    }

    private static final int CHECKPOINTS_KEPT = 2;
    private static final PrintStream NO_OUTPUT = new PrintStream(java.io.OutputStream.nullOutputStream());

    private final ElasticJob job;
    private final TrainingConfig config;
    private final PrintStream out;
    private final Framework framework;
    private final Pattern checkpointName;
    /** The current generation's backend (the only one unless an elastic run lost a worker). */
    private DistributedBackend backend;

    private boolean root;
    /** Workers at the start, and each worker's batch now. */
    private int startWorkers;

    private int batchSize;

    TrainingLoop(ElasticJob job, TrainingConfig config, PrintStream out, Framework framework) {
        this.job = job;
        this.backend = job.backend();
        this.config = config;
        this.out = out;
        this.root = backend.isRootWorker();
        this.startWorkers = backend.worldSize();
        this.batchSize = config.batchSize();
        this.framework = framework;
        this.checkpointName =
                Pattern.compile("checkpoint-step-(\\d+)\\." + Pattern.quote(framework.library.checkpointExtension));
    }

    /** The line the root prints before training on {@code workers}. */
    private String plan(int workers) {
        return String.format(
                        Locale.ROOT,
                        "training %s on %d worker(s) (%s)%s: %d epochs, %d steps per epoch of %d x %d examples, lr %s "
                                + "(%s), momentum %s, %d compute thread(s) per worker",
                        config.model().label(),
                        workers,
                        backend.name(),
                        framework.computesWith(),
                        config.epochs(),
                        framework.batchesPerEpoch(),
                        workers,
                        config.batchSize(),
                        config.lr(),
                        config.schedule().label(),
                        config.momentum(),
                        config.threads())
                + framework.gradients()
                + (framework.parquetFiles() == 0
                        ? ""
                        : ", streamed from " + framework.parquetFiles() + " Parquet file(s)");
    }

    /** Trains, from the latest checkpoint with {@code --resume}; {@code started} is when the run began. */
    TrainingSummary run(long started) {
        int workers = backend.worldSize();
        int reforms = 0;
        // When the last failure was noticed (nanoTime), until the next step is done; else -1.
        long recovering = -1;
        // A restarted group says when its first step is done (the fault drill compares recoveries).
        boolean restartedStep = LaunchEnvironment.parseRestartCount(JobEnvironment.currentVariables()) > 0;
        int batches = framework.batchesPerEpoch();
        long totalSteps = (long) config.epochs() * batches;
        TrainingPosition position = TrainingPosition.start();
        boolean resumed = false;
        if (config.resume() && !job.joined()) {
            // Agreed over the group: ranks whose directories are on other disks get its files.
            Optional<Path> latest = AgreedCheckpoint.newest(backend.group(), config.checkpointDir(), checkpointName);
            if (latest.isPresent()) {
                position = framework.load(latest.get());
                resumed = true;
                say("resuming from " + latest.get() + ": epoch " + (position.epoch() + 1) + ", step "
                        + (position.batchInEpoch() + 1) + " of " + batches + " (" + position.step() + " steps done)");
            } else {
                say("no checkpoint in " + config.checkpointDir() + "; starting from scratch");
            }
        }
        say(plan(workers));

        List<Double> accuracies = new ArrayList<>();
        // Every worker reads the history, as every worker loads the checkpoint: the summary is the same everywhere.
        List<TrainingSummary.EpochResult> epochResults = new ArrayList<>(
                resumed
                        ? EpochHistory.read(config.checkpointDir(), position.epoch(), root ? out : NO_OUTPUT)
                        : List.of());
        long step = position.step();
        long resumedFrom = position.step();
        int firstEpoch = position.epoch();
        int restarts = LaunchEnvironment.parseRestartCount(JobEnvironment.currentVariables());
        ProgressMarker.State progressState;
        if (job.joined()) {
            // Joined a running job at the members' epoch boundary: their position, batch and progress.
            long[] at = positionAtBoundary(0, 0, null);
            position = new TrainingPosition((int) at[0], 0, at[1]);
            progressState = new ProgressMarker.State(at[4], at[5]);
            framework.joinAt(batchSize, lrScale(backend.worldSize()));
            batches = framework.batchesPerEpoch();
            totalSteps = position.step() + (long) (config.epochs() - position.epoch()) * batches;
            resumedFrom = position.step();
            step = position.step();
            firstEpoch = position.epoch();
            // Every joiner says so (say() prints on the root only).
            out.println("joined the running group as rank " + backend.rank() + " of " + backend.worldSize()
                    + " (generation " + job.generation() + ") at epoch " + (position.epoch() + 1) + ", step "
                    + position.step());
        } else {
            progressState = initialProgress(position.step(), resumed, restarts);
        }
        FaultDrill drill = FaultDrill.fromEnvironment();
        double lastLoss = Double.NaN;
        double accuracy = Double.NaN;
        long trainedSamples = 0;
        long trainNanos = 0;
        boolean stoppedEarly = false;
        int epoch = position.epoch();
        int batch = position.batchInEpoch();
        // Examples of this epoch's order trained on so far, by every worker together.
        long examplesDone = (long) batch * batchSize * workers;
        double epochsTrained = epoch + (double) batch / batches;
        try (ProgressReporter progress = root ? ProgressReporter.to(out, System.getenv()) : ProgressReporter.silent();
                ProgressMarker marker = root && config.checkpointDir() != null
                        ? ProgressMarker.open(config.checkpointDir(), progressState)
                        : null) {
            for (; epoch < config.epochs() && !stoppedEarly; epoch++, batch = 0) {
                if (reachedMaxSteps(step)) {
                    stoppedEarly = true;
                    break;
                }
                if (epoch > firstEpoch && job.admitWaitingWorkers(framework::release)) {
                    // Workers joined at this boundary: they get the root's state and this position.
                    backend = job.backend();
                    root = backend.isRootWorker();
                    workers = backend.worldSize();
                    setBatchForWorkers(workers, null);
                    framework.regroup(backend, epoch, 0, batchSize, lrScale(workers));
                    positionAtBoundary(epoch, step, progressState);
                    batches = framework.batchesPerEpoch();
                    totalSteps = step + (long) (config.epochs() - epoch) * batches;
                    reforms++;
                    say(String.format(
                            Locale.ROOT,
                            "workers joined: going on with %d workers as generation %d from "
                                    + "step %d, %d examples per worker",
                            workers,
                            job.generation(),
                            step,
                            batchSize));
                }
                if (batch > 0) {
                    say(String.format(
                            Locale.ROOT,
                            "epoch %d/%d: resuming at step %d of %d",
                            epoch + 1,
                            config.epochs(),
                            batch + 1,
                            batches));
                }
                progress.start(String.format(Locale.ROOT, "epoch %d/%d", epoch + 1, config.epochs()), batches, "steps");
                long epochStart = System.nanoTime();
                long epochSamples = 0;
                long epochSteps = 0;
                // Over all workers, each step at the world size it ran at (a re-form changes it).
                long epochExamples = 0;
                double epochLossSum = 0;
                Steps steps = framework.epoch(epoch, batch);
                while (steps.hasNext()) {
                    if (reachedMaxSteps(step)) {
                        stoppedEarly = true;
                        break;
                    }
                    StepResult result;
                    try {
                        result = steps.train(step, totalSteps);
                    } catch (RuntimeException e) {
                        long noticed = System.nanoTime();
                        recovering = noticed;
                        long[] at = reform(e, epoch, step, examplesDone);
                        step = at[0];
                        examplesDone = at[1];
                        workers = backend.worldSize();
                        steps = framework.regroup(backend, epoch, examplesDone, batchSize, lrScale(workers));
                        batches = framework.batchesPerEpoch();
                        batch = (int) (examplesDone / ((long) batchSize * workers));
                        totalSteps = step + steps.remaining() + (long) (config.epochs() - epoch - 1) * batches;
                        reforms++;
                        say(String.format(
                                Locale.ROOT,
                                "lost a worker (%s): going on with %d workers as generation %d "
                                        + "from step %d, %d examples per worker, after %.0f ms",
                                e.getMessage(),
                                workers,
                                job.generation(),
                                step,
                                batchSize,
                                (System.nanoTime() - noticed) / 1e6));
                        continue;
                    }
                    examplesDone += (long) batchSize * workers;
                    if (restartedStep) {
                        say("step " + (step + 1) + " done at " + System.currentTimeMillis()
                                + " ms, the first after the restart");
                        restartedStep = false;
                    }
                    if (recovering >= 0) {
                        say(String.format(
                                Locale.ROOT,
                                "step %d done at %d ms, %.0f ms after the failure was noticed",
                                step + 1,
                                System.currentTimeMillis(),
                                (System.nanoTime() - recovering) / 1e6));
                        recovering = -1;
                    }
                    lastLoss = result.loss();
                    epochSamples += result.samples();
                    epochExamples += result.samples() * workers;
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
                    progress.update(
                            batch, () -> String.format(Locale.ROOT, "loss %.4f, %.0f samples/s", stepLoss, rate));
                    if (config.checkpointEvery() > 0 && step % config.checkpointEvery() == 0 && steps.hasNext()) {
                        saveCheckpoint(new TrainingPosition(epoch, batch, step));
                    }
                }
                long epochNanos = System.nanoTime() - epochStart;
                trainNanos += epochNanos;
                trainedSamples += epochSamples * workers;
                progress.finish();
                accuracy = evaluate(epoch, step, examplesDone);
                workers = backend.worldSize();
                examplesDone = 0;
                epochsTrained = stoppedEarly ? epoch + (double) batch / batches : epoch + 1;
                if (!stoppedEarly) {
                    accuracies.add(accuracy);
                }
                if (epochSteps > 0) {
                    epochResults.add(new TrainingSummary.EpochResult(
                            epoch + 1,
                            epochsTrained,
                            epochSteps,
                            epochExamples,
                            epochLossSum / epochSteps,
                            accuracy,
                            epochSamples * workers / (epochNanos / 1e9),
                            epochNanos / 1e9));
                }
                // The history before the checkpoint: a run resumed from the checkpoint finds its epochs.
                if (root && config.checkpointDir() != null) {
                    EpochHistory.write(config.checkpointDir(), epochResults);
                }
                saveCheckpoint(
                        stoppedEarly
                                ? new TrainingPosition(epoch, batch, step)
                                : new TrainingPosition(epoch + 1, 0, step));
                say(String.format(
                        Locale.ROOT,
                        "epoch %d/%d %s: loss %.4f, test accuracy %.4f",
                        epoch + 1,
                        config.epochs(),
                        stoppedEarly ? "stopped at --max-steps " + config.maxSteps() : "done",
                        lastLoss,
                        accuracy));
            }
        }
        if (Double.isNaN(accuracy)) {
            accuracy = evaluate(epoch, step, examplesDone);
        }
        double samplesPerSecond = trainNanos > 0 ? trainedSamples / (trainNanos / 1e9) : 0;
        TrainingSummary summary = new TrainingSummary(
                config.model().label(),
                framework.library.label,
                backend.name(),
                workers,
                epochsTrained,
                step,
                batchSize * workers,
                accuracy,
                accuracies,
                lastLoss,
                samplesPerSecond,
                (System.nanoTime() - started) / 1e9,
                resumedFrom,
                config.checkpointDir() == null && restarts > 0 ? TrainingSummary.UNKNOWN : progressState.stepsRedone(),
                restarts,
                epochResults);
        if (reforms > 0) {
            say("the group re-formed " + reforms + " time(s) without a restart; " + startWorkers
                    + " worker(s) started, " + workers + " finished");
        }
        say(summary.describe());
        return summary;
    }

    /**
     * After {@code failure} (a collective of the current generation failed): in an elastic run,
     * re-forms the group ({@link ElasticJob#reform}) and returns the root's step and examples done
     * of the epoch; elsewhere throws {@code failure}. Sets the batch each worker trains from now on.
     */
    private long[] reform(RuntimeException failure, int epoch, long step, long examplesDone) {
        if (!job.isElastic()) {
            throw failure;
        }
        backend = job.reform(failure, framework::release);
        root = backend.isRootWorker();
        setBatchForWorkers(backend.worldSize(), failure);
        long[] at = {step, examplesDone};
        backend.group()
                .broadcast(DenseBuffer.of(at), DistributedBackend.ROOT_RANK)
                .await();
        return at;
    }

    /** Each worker's batch among {@code workers}: the same, or (--elastic-batch global) a share of the starting global batch. */
    private void setBatchForWorkers(int workers, RuntimeException cause) {
        if (config.elasticBatch() == TrainingConfig.ElasticBatch.GLOBAL) {
            long global = (long) config.batchSize() * startWorkers;
            if (global % workers != 0) {
                throw new IllegalStateException(
                        "--elastic-batch global: the global batch of " + global + " does not " + "divide among "
                                + workers + " workers; use --elastic-batch per-worker",
                        cause);
            }
            batchSize = (int) (global / workers);
        }
    }

    /** The learning rate's factor among {@code workers}: workers over starting workers (per-worker batches), else 1. */
    private double lrScale(int workers) {
        return config.elasticBatch() == TrainingConfig.ElasticBatch.PER_WORKER ? (double) workers / startWorkers : 1.0;
    }

    /**
     * At an epoch boundary where workers joined, after the root's state was distributed: every
     * worker takes the root's epoch, step, batch, starting workers and progress marker (members
     * pass theirs; a joiner passes zeros and a null state and takes them).
     */
    private long[] positionAtBoundary(int epoch, long step, ProgressMarker.State progress) {
        long[] at = {
            epoch,
            step,
            batchSize,
            startWorkers,
            progress == null ? 0 : progress.reachedStep(),
            progress == null ? 0 : progress.stepsRedone()
        };
        backend.group()
                .broadcast(DenseBuffer.of(at), DistributedBackend.ROOT_RANK)
                .await();
        batchSize = (int) at[2];
        startWorkers = (int) at[3];
        return at;
    }

    /** The test accuracy; in an elastic run that loses a worker meanwhile, on the re-formed group. */
    private double evaluate(int epoch, long step, long examplesDone) {
        try {
            return framework.evaluate();
        } catch (RuntimeException e) {
            long[] at = reform(e, epoch, step, examplesDone);
            framework.regroup(backend, epoch, at[1], batchSize, lrScale(backend.worldSize()));
            return framework.evaluate();
        }
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
        backend.group()
                .broadcast(DenseBuffer.of(values), DistributedBackend.ROOT_RANK)
                .await();
        return new ProgressMarker.State(values[0], values[1]);
    }

    /**
     * The learning rate of step {@code step} of {@code totalSteps}: constant, or decaying linearly
     * from {@code --lr} to 0 over the planned steps. A function of the step alone, so a resumed run
     * continues the schedule where the checkpoint left it.
     */
    static double learningRate(TrainingConfig config, long step, long totalSteps) {
        return switch (config.schedule()) {
            case CONSTANT -> config.lr();
            case LINEAR -> config.lr() * Math.max(0.0, 1.0 - (double) step / totalSteps);
        };
    }

    private boolean reachedMaxSteps(long step) {
        return config.maxSteps() > 0 && step >= config.maxSteps();
    }

    /**
     * With {@code --checkpoint-dir}: a checkpoint at {@code position} (by the root, or by every
     * worker where the framework shards it), keeping the newest two with the files beside each
     * that extend its name (a sharded optimizer state's shards).
     */
    private void saveCheckpoint(TrainingPosition position) {
        if (config.checkpointDir() == null || !root && !framework.savesOnEveryWorker()) {
            return;
        }
        Path dir = config.checkpointDir();
        framework.save(
                dir.resolve(String.format(
                        Locale.ROOT,
                        "checkpoint-step-%09d.%s",
                        position.step(),
                        framework.library.checkpointExtension)),
                position);
        if (!root) {
            return;
        }
        try (Stream<Path> files = Files.list(dir)) {
            List<Path> all = files.toList();
            List<Path> old = all.stream()
                    .filter(p ->
                            checkpointName.matcher(p.getFileName().toString()).matches())
                    .sorted(Comparator.comparingLong(this::checkpointStep).reversed())
                    .skip(CHECKPOINTS_KEPT)
                    .toList();
            for (Path p : old) {
                String besides = p.getFileName() + ".";
                for (Path q : all) {
                    if (q.getFileName().toString().startsWith(besides)) {
                        Files.deleteIfExists(q);
                    }
                }
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cleaning old checkpoints in " + dir + " failed: " + e.getMessage(), e);
        }
    }

    private long checkpointStep(Path p) {
        Matcher m = checkpointName.matcher(p.getFileName().toString());
        return m.matches() ? Long.parseLong(m.group(1)) : -1;
    }

    private void say(String line) {
        if (root) {
            out.println(line);
            out.flush();
        }
    }
}
