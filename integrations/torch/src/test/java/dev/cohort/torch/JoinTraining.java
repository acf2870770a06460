package dev.cohort.torch;

import dev.cohort.api.DistributeRequest;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.Join;
import dev.cohort.libtorch.LibTorch;
import java.util.ArrayList;
import java.util.List;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Optimizer;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * Uneven inputs on the tiny training problem ({@link TinyTraining}): rank r holds
 * {@code batches[r]} batches (its shard of each step's global batch); the ranks train inside a
 * {@link Join} scope and average their loss with {@code averageAll} at every step. The reference is
 * one process that at each step trains on the shards of the ranks that still hold a batch then.
 */
final class JoinTraining {

    /** The uneven inputs of the tests: 100, 90 and 73 batches. */
    static final int[] BATCHES = {100, 90, 73};

    private JoinTraining() {}

    /** Final weights, and the mean loss of each step (over the ranks training at it). */
    record Outcome(float[] weights, double[] meanLoss) {}

    static Outcome single(String kind, boolean clip, int[] batches) {
        LibTorch.load();
        int world = batches.length;
        int shard = TinyTraining.GLOBAL_BATCH / world;
        int steps = java.util.Arrays.stream(batches).max().orElse(0);
        TinyTraining.Net model = new TinyTraining.Net(0);
        Optimizer optimizer = ZeroTraining.optimizer(kind, model.parameters());
        double[] meanLoss = new double[steps];
        for (int s = 0; s < steps; s++) {
            try (PointerScope scope = new PointerScope()) {
                optimizer.zero_grad();
                List<Tensor> losses = new ArrayList<>();
                double sum = 0;
                for (int r = 0; r < world; r++) {
                    if (s < batches[r]) {
                        Tensor loss = ZeroTraining.loss(model, TinyTraining.batch(s, r * shard, shard));
                        sum += loss.item_double();
                        losses.add(loss);
                    }
                }
                Tensor total = losses.get(0);
                for (int i = 1; i < losses.size(); i++) {
                    total = total.add(losses.get(i));
                }
                total.div(new Scalar((double) losses.size())).backward();
                if (clip) {
                    torch.clip_grad_norm_(model.parameters(), ZeroTraining.CLIP, 2.0, false);
                }
                optimizer.step();
                meanLoss[s] = sum / losses.size();
            }
        }
        return new Outcome(TinyTraining.weights(model), meanLoss);
    }

    /** This rank's run: its {@code batches[rank]} steps inside a join scope; NaN for steps it did not train. */
    static Outcome distributed(DistributedBackend backend, String kind, int stage, boolean clip, int[] batches) {
        LibTorch.load();
        int rank = backend.rank();
        int shard = TinyTraining.GLOBAL_BATCH / backend.worldSize();
        TinyTraining.Net model = new TinyTraining.Net(rank);
        DistributedOptimizer optimizer;
        try (PointerScope scope = new PointerScope()) {
            optimizer = (DistributedOptimizer) backend.distribute(DistributeRequest.of(
                                    (Module) model, ZeroTraining.optimizer(kind, model.parameters()), null, null)
                            .withOption(TorchDistributor.ZERO_STAGE, stage))
                    .optimizer();
        }
        double[] meanLoss = new double[java.util.Arrays.stream(batches).max().orElse(0)];
        java.util.Arrays.fill(meanLoss, Double.NaN);
        try (Join join = backend.join(optimizer)) {
            for (int s = 0; s < batches[rank]; s++) {
                try (PointerScope scope = new PointerScope()) {
                    optimizer.zero_grad();
                    Tensor loss = ZeroTraining.loss(model, TinyTraining.batch(s, rank * shard, shard));
                    loss.backward();
                    if (clip) {
                        optimizer.clipGradNorm(ZeroTraining.CLIP);
                    }
                    optimizer.step();
                    meanLoss[s] = backend.averageAll(loss.item_double());
                }
            }
        }
        return new Outcome(TinyTraining.weights(model), meanLoss);
    }
}
