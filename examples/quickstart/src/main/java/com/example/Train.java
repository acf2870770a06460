package com.example;

import dev.cohort.api.Backends;
import dev.cohort.api.DistributeRequest;
import dev.cohort.api.Distributed;
import dev.cohort.api.DistributedBackend;
import dev.cohort.torch.MiniBatch;
import dev.cohort.torch.ShardedLoader;
import dev.cohort.torch.TensorSamples;
import java.util.SplittableRandom;
import org.bytedeco.pytorch.LinearImpl;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Optimizer;
import org.bytedeco.pytorch.SGD;
import org.bytedeco.pytorch.SGDOptions;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/** Fits y = x . w on 4,096 examples, with as many workers as `cohort run` starts. */
public final class Train {
    public static void main(String[] args) {
        try (DistributedBackend backend = Backends.select(null)) {    // COHORT_BACKEND: cohort run sets auto
            backend.initialize();
            float[] x = new float[4096 * 16], y = new float[4096];
            SplittableRandom random = new SplittableRandom(7);
            for (int i = 0; i < x.length; i++) {
                x[i] = (float) random.nextGaussian();
                y[i / 16] += x[i] * (i % 16) / 16f;
            }
            TensorSamples data = new TensorSamples(torch.tensor(x).reshape(4096, 16), torch.tensor(y).reshape(4096, 1));
            LinearImpl model = new LinearImpl(16, 1);
            Distributed<Module, Optimizer, ShardedLoader, Object> d = backend.distribute(DistributeRequest.of(
                    (Module) model, new SGD(model.parameters(), new SGDOptions(0.05)), ShardedLoader.of(data, 64, true, 42), null));
            for (int epoch = 1; epoch <= 5; epoch++) {
                double sum = 0;
                int steps = 0;
                for (MiniBatch b : d.trainingData().epoch(epoch)) {
                    d.optimizer().zero_grad();
                    Tensor loss = torch.mse_loss(model.forward(b.inputs()), b.targets());
                    loss.backward();
                    d.optimizer().step();    // gradients averaged across the workers first
                    sum += loss.item_float();
                    steps++;
                }
                double mean = backend.averageAll(sum / steps);
                if (backend.isRootWorker()) {
                    System.out.printf("epoch %d: loss %.4f (%d workers on %s)%n", epoch, mean, backend.worldSize(), backend.name());
                }
            }
        }
    }
}
