package dev.cohort.bench;

import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.GradientCollector;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import dev.cohort.api.DistributedBackend;
import dev.cohort.djl.DistributedTrainer;
import dev.cohort.examples.DjlFashionMnistTraining;
import dev.cohort.examples.DjlModels;

/**
 * The training benchmark's worker through DJL's PyTorch engine ({@code --framework djl}): the same
 * models, batches and plain SGD as the JavaCPP worker, one compute thread, with Cohort's
 * {@link DistributedTrainer}; DJL cannot overlap communication with backward (no gradient hooks),
 * so gradients are averaged at the step.
 */
final class DjlTrainWorker {

    private static final int CLASSES = 10;

    /** The optimizer {@code --optimizer} names, as the torch benchmark's: SGD at 0.01, momentum 0.9, Adam at 0.001. */
    private static Optimizer optimizer(String name) {
        return switch (name) {
            case "sgd" ->
                Optimizer.sgd().setLearningRateTracker(Tracker.fixed(0.01f)).build();
            case "sgd-momentum" ->
                Optimizer.sgd()
                        .setLearningRateTracker(Tracker.fixed(0.01f))
                        .optMomentum(0.9f)
                        .build();
            case "adam" ->
                Optimizer.adam().optLearningRateTracker(Tracker.fixed(0.001f)).build();
            default -> throw new IllegalArgumentException("--optimizer " + name);
        };
    }

    private DjlTrainWorker() {}

    /** Trains {@code s.steps} timed steps after {@code s.warm}; the root's result, or null on other ranks. */
    static TrainBenchmark.Result run(TrainSettings s) throws Exception {
        int steps = s.steps;
        int warm = s.warm;
        int batch = s.batch;
        String modelName = s.model;
        Engine engine =
                DjlFashionMnistTraining.loadEngine(1); // first: gloo and hier then say they cannot run beside it
        boolean cnn = modelName.equals("demo-cnn");
        Shape image = cnn ? new Shape(1, 28, 28) : new Shape(784);
        try (DistributedBackend b = Engines.open(s.backend, s.engineOptions);
                NDManager manager = engine.newBaseManager();
                Model model = Model.newInstance("bench", engine.getEngineName())) {
            b.initialize();
            engine.setRandomSeed(b.rank());
            model.setBlock(
                    cnn
                            ? DjlModels.cnn()
                            : modelName.equals("demo-mlp")
                                    ? DjlModels.mlp(512, 256)
                                    : DjlModels.mlp(s.hidden, s.hidden));
            DefaultTrainingConfig config =
                    new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss()).optOptimizer(optimizer(s.optimizer));
            DistributedTrainer.Options options =
                    new DistributedTrainer.Options().zeroStage(s.zero).gradCompression(s.gradCompression);
            try (DistributedTrainer trainer = DistributedTrainer.of(b, model, config, options)) {
                trainer.initialize(new Shape(batch).addAll(image));
                int nb = 16;
                NDArray[] xs = new NDArray[nb];
                NDArray[] ys = new NDArray[nb];
                for (int i = 0; i < nb; i++) {
                    xs[i] = manager.randomNormal(new Shape(batch).addAll(image));
                    ys[i] = manager.randomInteger(0, CLASSES, new Shape(batch), ai.djl.ndarray.types.DataType.INT64)
                            .toType(ai.djl.ndarray.types.DataType.FLOAT32, false);
                }
                for (int i = 0; i < warm; i++) {
                    step(trainer, manager, xs[i % nb], ys[i % nb]);
                }
                b.barrier();
                long waited0 = trainer.communicationNanos();
                long t0 = System.nanoTime();
                for (int i = 0; i < steps; i++) {
                    step(trainer, manager, xs[i % nb], ys[i % nb]);
                }
                b.barrier();
                double seconds = (System.nanoTime() - t0) / 1e9;
                double share = (trainer.communicationNanos() - waited0) / 1e9 / seconds;
                if (!b.isRootWorker()) {
                    return null;
                }
                long count = 0;
                for (Parameter p : model.getBlock().getParameters().values()) {
                    count += p.getArray().size();
                }
                int n = b.worldSize();
                return new TrainBenchmark.Result(
                        "cohort-djl-" + b.name(),
                        modelName,
                        "java " + Runtime.version()
                                + ", DJL " + Engine.getDjlVersion() + " (" + engine.getEngineName() + " "
                                + engine.getVersion()
                                + ")",
                        n,
                        1,
                        steps,
                        batch,
                        count,
                        seconds,
                        steps / seconds,
                        (double) steps * batch * n / seconds,
                        TrainBenchmark.loadedBlas(),
                        share,
                        null,
                        null);
            }
        }
    }

    /** One step; its temporaries live in a manager of their own, closed at its end. */
    private static void step(DistributedTrainer trainer, NDManager manager, NDArray x, NDArray y) {
        try (NDManager scope = manager.newSubManager()) {
            x.tempAttach(scope);
            y.tempAttach(scope);
            try (GradientCollector collector = trainer.newGradientCollector()) {
                NDArray loss = trainer.getLoss().evaluate(new NDList(y), trainer.forward(new NDList(x)));
                collector.backward(loss);
            }
            trainer.step();
        }
    }
}
