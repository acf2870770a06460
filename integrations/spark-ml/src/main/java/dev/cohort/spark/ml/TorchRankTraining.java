package dev.cohort.spark.ml;

import dev.cohort.api.DistributedBackend;
import dev.cohort.api.checkpoint.TrainingPosition;
import dev.cohort.data.LoaderOptions;
import dev.cohort.data.ParquetDataset;
import dev.cohort.libtorch.LibTorch;
import dev.cohort.torch.Checkpoints;
import dev.cohort.torch.MiniBatch;
import dev.cohort.torch.ParquetLoader;
import dev.cohort.torch.TorchTraining;
import java.nio.file.Path;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Adam;
import org.bytedeco.pytorch.AdamOptions;
import org.bytedeco.pytorch.LongOptional;
import org.bytedeco.pytorch.Optimizer;
import org.bytedeco.pytorch.OptimizerParamGroupVector;
import org.bytedeco.pytorch.SGD;
import org.bytedeco.pytorch.SGDOptions;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/** A rank's training through JavaCPP's libtorch and Cohort's torch integration ({@link TorchTraining}). */
final class TorchRankTraining implements RankTraining {

    private final TrainSettings settings;
    private final TorchClassifier model;
    private final TorchTraining<TorchClassifier, Object, Object> training;
    private final ParquetLoader data;
    private final long stepsPerEpoch;

    TorchRankTraining(
            DistributedBackend backend,
            TrainSettings settings,
            ParquetDataset shard,
            LoaderOptions options,
            long steps) {
        LibTorch.load();
        torch.set_num_threads(settings.threads());
        torch.manual_seed(settings.seed());
        this.settings = settings;
        this.model = ModelFactories.torch(settings.modelFactory(), settings.width(), settings.classes());
        this.training = TorchTraining.distribute(backend, model, optimizer(settings, model), null);
        this.data = ParquetLoader.of(shard, options);
        this.stepsPerEpoch = steps;
    }

    @Override
    public double[] epoch(int epoch, long steps) {
        double lossSum = 0;
        long correct = 0;
        long step = 0;
        try (ParquetLoader.Epoch batches = data.epoch(epoch)) {
            for (MiniBatch b : batches) {
                if (step == steps) {
                    break;
                }
                setLearningRate(RankTraining.learningRate(settings, epoch * stepsPerEpoch + step, stepsPerEpoch));
                // The scope frees the step's native temporaries at once, not at some later GC.
                try (PointerScope scope = new PointerScope()) {
                    training.optimizer().zero_grad();
                    Tensor scores = training.model().forward(b.inputs());
                    Tensor loss = torch.cross_entropy(scores, b.targets());
                    loss.backward();
                    training.optimizer().step();
                    lossSum += loss.item_double();
                    correct += scores.argmax(new LongOptional(1), false)
                            .eq(b.targets())
                            .sum()
                            .item_long();
                }
                step++;
            }
        }
        return new double[] {lossSum, correct};
    }

    @Override
    public void save(Path checkpoint, TrainingPosition position) {
        Checkpoints.save(checkpoint, model, training.optimizer(), position);
    }

    @Override
    public TrainingPosition load(Path checkpoint) {
        return Checkpoints.load(checkpoint, model, training.optimizer());
    }

    @Override
    public byte[] weights() {
        return TorchWeights.of(model);
    }

    @Override
    public void close() {
        // Nothing of its own: the model's native memory goes with the rank's JVM.
    }

    private void setLearningRate(double lr) {
        OptimizerParamGroupVector groups = training.optimizer().param_groups();
        for (long g = 0; g < groups.size(); g++) {
            groups.get(g).options().set_lr(lr);
        }
    }

    private static Optimizer optimizer(TrainSettings settings, TorchClassifier model) {
        return switch (settings.optimizer()) {
            case "adam" -> new Adam(model.parameters(), new AdamOptions(settings.learningRate()));
            case "sgd" -> {
                SGDOptions options = new SGDOptions(settings.learningRate());
                options.momentum().put(0.9);
                yield new SGD(model.parameters(), options);
            }
            default -> throw new IllegalArgumentException("optimizer must be sgd or adam, got " + settings.optimizer());
        };
    }
}
