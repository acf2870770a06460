package dev.cohort.djl;

import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.GradientCollector;
import ai.djl.training.loss.Loss;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.Join;
import dev.cohort.testkit.WorkerProcess;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * Uneven inputs on DJL: rank r of a tcp job trains {@code BATCHES[r]} steps inside a {@link Join}
 * scope, on its own {@code BATCH} examples of each step ({@link DjlWorker#synthetic}), SGD with
 * momentum, the averaged gradients clipped ({@code clip=MAXNORM}) or not, and averages its loss
 * with {@link DistributedArrays#averageAll} at every step. Alone (world 1) it is the reference: at
 * each step one process trains on the examples of the ranks that still hold a batch then. Args:
 * {@code OUT BATCHES... [clip=MAXNORM]}, e.g. {@code out.txt 9 6 4}; every rank writes its
 * parameters to {@code OUT.<rank>}.
 */
public final class DjlJoinWorker {

    static final int BATCH = 4;

    public static void main(String[] args) {
        WorkerProcess.main(() -> {
            Path out = Path.of(args[0]);
            double clip = 0;
            int[] batches = new int[0];
            for (int i = 1; i < args.length; i++) {
                if (args[i].startsWith("clip=")) {
                    clip = Double.parseDouble(args[i].substring("clip=".length()));
                } else {
                    batches = Arrays.copyOf(batches, batches.length + 1);
                    batches[batches.length - 1] = Integer.parseInt(args[i]);
                }
            }
            int steps = Arrays.stream(batches).max().orElse(0);
            DjlWorker.Synthetic data = DjlWorker.synthetic(steps * batches.length * BATCH);
            Engine engine = DjlEngines.load("PyTorch");
            try (DistributedBackend backend = DjlWorker.backend();
                    NDManager manager = NDManager.newBaseManager();
                    Model model = Model.newInstance("mlp")) {
                backend.initialize();
                engine.setRandomSeed(1000 + 17 * backend.rank());
                model.setBlock(DjlWorker.mlp());
                DefaultTrainingConfig config = new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                        .optOptimizer(DjlWorker.optimizer("momentum"));
                boolean alone = backend.worldSize() == 1;
                try (DistributedTrainer trainer = DistributedTrainer.of(backend, model, config)) {
                    trainer.initialize(new Shape(BATCH, DjlWorker.FEATURES));
                    int rank = backend.rank();
                    try (Join join = backend.join(trainer)) {
                        for (int s = 0; s < (alone ? steps : batches[rank]); s++) {
                            // Alone: the examples of every rank that holds a batch at step s, in rank order.
                            int from = s * batches.length + (alone ? 0 : rank);
                            int count = 0;
                            for (int r = 0; r < batches.length; r++) {
                                count += alone && s < batches[r] ? 1 : 0;
                            }
                            int shards = alone ? count : 1;
                            float[] x = Arrays.copyOfRange(
                                    data.features(),
                                    from * BATCH * DjlWorker.FEATURES,
                                    (from + shards) * BATCH * DjlWorker.FEATURES);
                            float[] y = new float[shards * BATCH];
                            for (int e = 0; e < y.length; e++) {
                                y[e] = data.labels()[from * BATCH + e];
                            }
                            step(
                                    trainer,
                                    manager.create(x, new Shape(y.length, DjlWorker.FEATURES)),
                                    manager.create(y),
                                    clip);
                        }
                    }
                }
                DjlWorker.writeParameters(model, Path.of(out + "." + backend.rank()));
                System.out.println("OK rank " + backend.rank());
            }
        });
    }

    /** Forward, backward, the loss averaged over the ranks training, clip, update. */
    private static void step(DistributedTrainer trainer, NDArray x, NDArray y, double clip) {
        NDArray loss;
        try (GradientCollector collector = trainer.newGradientCollector()) {
            NDArray pred = trainer.forward(new NDList(x)).singletonOrThrow();
            loss = trainer.getLoss().evaluate(new NDList(y), new NDList(pred));
            collector.backward(loss);
        }
        DistributedArrays.averageAll(trainer.backend(), loss);
        if (clip > 0) {
            trainer.clipGradNorm(clip);
        }
        trainer.step();
    }
}
