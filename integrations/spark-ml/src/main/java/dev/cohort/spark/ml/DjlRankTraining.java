package dev.cohort.spark.ml;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.GradientCollector;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.checkpoint.TrainingPosition;
import dev.cohort.data.Batch;
import dev.cohort.data.DataPosition;
import dev.cohort.data.LoaderOptions;
import dev.cohort.data.ParquetDataset;
import dev.cohort.data.ShardLoader;
import dev.cohort.djl.Checkpoints;
import dev.cohort.djl.DistributedTrainer;
import java.nio.file.Path;

/** A rank's training through DJL's PyTorch engine and Cohort's DJL integration ({@link DistributedTrainer}). */
final class DjlRankTraining implements RankTraining {

    private final TrainSettings settings;
    private final Model model;
    private final DistributedTrainer trainer;
    private final ParquetDataset shard;
    private final LoaderOptions options;

    /** Call {@link DjlRuntime#load} first, before the backend is chosen: {@code auto} then passes over engines that load JavaCPP's libtorch. */
    DjlRankTraining(
            DistributedBackend backend,
            TrainSettings settings,
            ParquetDataset shard,
            LoaderOptions options,
            long steps) {
        this.settings = settings;
        this.shard = shard;
        this.options = options;
        Engine.getEngine(DjlRuntime.ENGINE).setRandomSeed((int) settings.seed());
        this.model = Model.newInstance("cohort", Device.cpu(), DjlRuntime.ENGINE);
        model.setBlock(ModelFactories.djl(settings.modelFactory(), settings.width(), settings.classes()));
        // DJL counts updates from 1 (restored with the optimizer's state on resume): update 1 is step 0.
        Tracker schedule = update -> (float) RankTraining.learningRate(settings, update - 1, steps);
        Optimizer optimizer = switch (settings.optimizer()) {
            case "adam" -> Optimizer.adam().optLearningRateTracker(schedule).build();
            case "sgd" ->
                Optimizer.sgd()
                        .setLearningRateTracker(schedule)
                        .optMomentum(0.9f)
                        .build();
            default -> throw new IllegalArgumentException("optimizer must be sgd or adam, got " + settings.optimizer());
        };
        this.trainer = DistributedTrainer.of(
                backend,
                model,
                new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                        .optOptimizer(optimizer)
                        .optDevices(new Device[] {Device.cpu()}));
        trainer.initialize(new Shape(settings.batchSize(), settings.width()));
    }

    @Override
    public double[] epoch(int epoch, long steps) {
        double lossSum = 0;
        long correct = 0;
        long step = 0;
        try (ShardLoader batches = shard.loader(options, DataPosition.start(epoch))) {
            while (step < steps && batches.hasNext()) {
                Batch b = batches.next();
                // The sub-manager frees the step's arrays at once.
                try (NDManager arrays = trainer.getManager().newSubManager()) {
                    NDArray x = arrays.create(b.features(), new Shape(b.rows(), b.width()));
                    NDArray y = b.hasLongLabels()
                            ? arrays.create(b.longLabels(), new Shape(b.rows()))
                            : arrays.create(b.intLabels(), new Shape(b.rows())).toType(DataType.INT64, false);
                    try (GradientCollector collector = trainer.newGradientCollector()) {
                        NDArray scores = trainer.forward(new NDList(x)).singletonOrThrow();
                        NDArray loss = trainer.getLoss().evaluate(new NDList(y), new NDList(scores));
                        collector.backward(loss);
                        lossSum += loss.getFloat();
                        correct += scores.argMax(1).eq(y).sum().getLong();
                    }
                    trainer.step();
                }
                step++;
            }
        }
        return new double[] {lossSum, correct};
    }

    @Override
    public void save(Path checkpoint, TrainingPosition position) {
        Checkpoints.save(checkpoint, trainer, position);
    }

    @Override
    public TrainingPosition load(Path checkpoint) {
        return Checkpoints.load(checkpoint, trainer);
    }

    @Override
    public byte[] weights() {
        return DjlRuntime.weights(model.getBlock());
    }

    @Override
    public void close() {
        trainer.close();
        model.close();
    }
}
