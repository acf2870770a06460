package dev.cohort.torch;

import dev.cohort.api.DistributedBackend;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ProcessGroup;
import org.bytedeco.pytorch.Tensor;

/** Collectives on CPU tensors: the tensor's memory is wrapped, not copied. */
public final class TorchCollectives {

    private TorchCollectives() {}

    /** The element-wise mean of {@code t} over all workers, as a new tensor; {@code t} is not modified. */
    public static Tensor averageAll(DistributedBackend backend, Tensor t) {
        Tensor copy = t.detach().contiguous().clone();
        DenseBuffer view = TensorBuffers.view(copy);
        view.copyFrom(backend.averageAll(view)); // inside a join scope: over the ranks still training
        return copy;
    }

    /** Copies rank {@code root}'s {@code t} into {@code t} on every rank, in place (t must be contiguous). */
    public static void broadcast(ProcessGroup group, Tensor t, int root) {
        DenseBuffer view = TensorBuffers.view(t);
        group.broadcast(view, root).await();
    }
}
