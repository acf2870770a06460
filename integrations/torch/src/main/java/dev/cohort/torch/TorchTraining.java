package dev.cohort.torch;

import dev.cohort.api.DistributeRequest;
import dev.cohort.api.Distributed;
import dev.cohort.api.DistributedBackend;
import java.util.Objects;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Optimizer;

/**
 * A JavaCPP PyTorch model, optimizer and data distributed for training, with their types:
 * {@code distribute} returns the model as the program's own class, the optimizer as the
 * {@link DistributedOptimizer} to step (never the one passed in, which would train each rank
 * alone), and the training data as this rank's shard, of the class passed in: a {@link
 * ShardedLoader}, a {@link ShardedMnistLoader} or a {@link ParquetLoader}. No casts.
 *
 * <pre>{@code
 * TorchTraining<Net, ShardedLoader, Object> t =
 *         TorchTraining.distribute(backend, net, sgd, ShardedLoader.of(samples, 64, true, 42));
 * for (MiniBatch b : t.trainingData().epoch(epoch)) {
 *     t.optimizer().zero_grad();
 *     torch.cross_entropy(t.model().forward(b.inputs()), b.targets()).backward();
 *     t.optimizer().step();
 * }
 * }</pre>
 *
 * @param model        the model (its parameters now the root's on every rank)
 * @param optimizer    the optimizer to step: averages gradients across ranks first
 * @param trainingData this rank's shard of the training data, or null when none was given
 * @param lrScheduler  the learning-rate scheduler, passed through
 */
public record TorchTraining<M extends Module, D, S>(
        M model, DistributedOptimizer optimizer, D trainingData, S lrScheduler) {

    /** {@link #distribute(DistributedBackend, DistributeRequest)} without a scheduler or options. */
    public static <M extends Module, D> TorchTraining<M, D, Object> distribute(
            DistributedBackend backend, M model, Optimizer optimizer, D trainingData) {
        return distribute(backend, DistributeRequest.of(model, optimizer, trainingData, null));
    }

    /**
     * Distributes the request's model, optimizer and data ({@link TorchDistributor} says how, and
     * which options it takes) on {@code backend}, which must be initialized.
     *
     * @throws IllegalArgumentException when the request has no optimizer, or the torch integration refuses it
     */
    public static <M extends Module, O extends Optimizer, D, S> TorchTraining<M, D, S> distribute(
            DistributedBackend backend, DistributeRequest<M, O, D, S> request) {
        Objects.requireNonNull(backend, "backend");
        if (request.optimizer() == null) {
            throw new IllegalArgumentException("TorchTraining.distribute needs the optimizer that trains the model: "
                    + "the one it returns averages the gradients at each step");
        }
        Distributed<M, O, D, S> d = new TorchDistributor().distribute(backend, request);
        return new TorchTraining<>(
                d.model(), (DistributedOptimizer) (Object) d.optimizer(), d.trainingData(), d.lrScheduler());
    }
}
