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
import ai.djl.training.GradientCollector;
import ai.djl.training.Trainer;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;

/**
 * What the divergence check costs a DJL step: on one process, the benchmark's MLP (784-1024-1024-10,
 * 1.86 M parameters, batch 64), five rounds of 100 training steps, each followed by 100
 * fingerprintings of every parameter ({@link DistributedTrainer#fingerprint}); prints the time of
 * each and the share of a step that one check per 100 steps takes. Not a test: run it after
 * {@code mvn -pl tools/dist -am package -DskipTests} with {@code OMP_NUM_THREADS=1 DJL_OFFLINE=true java
 * -cp integrations/djl/target/test-classes:$(cat tools/dist/target/classpath.txt) dev.cohort.djl.FingerprintCost}.
 */
public final class FingerprintCost {
    public static void main(String[] args) {
        Engine engine = DjlEngines.load("PyTorch");
        try (NDManager m = engine.newBaseManager();
                Model model = Model.newInstance("mlp")) {
            model.setBlock(new SequentialBlock()
                    .add(Linear.builder().setUnits(1024).build())
                    .add(Activation::relu)
                    .add(Linear.builder().setUnits(1024).build())
                    .add(Activation::relu)
                    .add(Linear.builder().setUnits(10).build()));
            DefaultTrainingConfig config = new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                    .optOptimizer(Optimizer.sgd()
                            .setLearningRateTracker(Tracker.fixed(0.01f))
                            .build());
            try (Trainer t = model.newTrainer(config)) {
                t.initialize(new Shape(64, 784));
                NDArray x = m.randomNormal(new Shape(64, 784));
                NDArray y = m.randomInteger(0, 10, new Shape(64), ai.djl.ndarray.types.DataType.FLOAT32);
                long params = 0;
                for (Parameter p : model.getBlock().getParameters().values())
                    params += p.getArray().size();
                for (int round = 0; round < 5; round++) {
                    long t0 = System.nanoTime();
                    for (int i = 0; i < 100; i++) {
                        try (GradientCollector c = t.newGradientCollector()) {
                            NDArray pred = t.forward(new NDList(x)).singletonOrThrow();
                            c.backward(t.getLoss().evaluate(new NDList(y), new NDList(pred)));
                        }
                        t.step();
                    }
                    double step = (System.nanoTime() - t0) / 100e6;
                    long t1 = System.nanoTime();
                    long sink = 0;
                    for (int i = 0; i < 100; i++) {
                        for (Parameter p : model.getBlock().getParameters().values())
                            sink += DistributedTrainer.fingerprint(p.getArray());
                    }
                    double fp = (System.nanoTime() - t1) / 100e6;
                    System.out.printf(
                            "params=%d step=%.2f ms fingerprints=%.3f ms (one check per 100 steps: %.4f %% of a step) sink=%d%n",
                            params, step, fp, fp / 100 / step * 100, sink);
                }
            }
        }
    }
}
