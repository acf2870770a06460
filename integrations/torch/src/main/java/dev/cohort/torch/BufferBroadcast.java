package dev.cohort.torch;

import dev.cohort.api.DistributedBackend;
import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.libtorch.LibTorch;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;

/**
 * Copies the root's module buffers (BatchNorm's running statistics and the like) into every
 * rank's after each step, as DDP's {@code broadcast_buffers} does before each forward: one
 * broadcast per element type, the buffers packed into one flat buffer, so a model with hundreds of
 * BatchNorm layers costs a broadcast or two, not hundreds.
 */
final class BufferBroadcast {

    private final ProcessGroup group;
    private final List<Packed> packs = new ArrayList<>();

    private BufferBroadcast(ProcessGroup group) {
        this.group = group;
    }

    /** For {@code buffers} (checked: CPU, a type Cohort moves); null where there is nothing to do. */
    static BufferBroadcast of(ProcessGroup group, TensorVector buffers) {
        if (group.size() == 1 || buffers.size() == 0) {
            return null;
        }
        Map<DataType, List<Tensor>> byType = new LinkedHashMap<>();
        for (long i = 0; i < buffers.size(); i++) {
            Tensor b = LibTorch.retain(new Tensor(buffers.get(i))); // an owning handle, not a view into the vector
            DataType type = TensorBuffers.checkMovable(b, "buffer " + i + " of the model");
            byType.computeIfAbsent(type, t -> new ArrayList<>()).add(b);
        }
        BufferBroadcast broadcast = new BufferBroadcast(group);
        byType.forEach((type, tensors) -> {
            if (tensors.stream().mapToLong(Tensor::numel).sum() > 0) {
                broadcast.packs.add(new Packed(type, tensors));
            }
        });
        return broadcast;
    }

    /** Every rank's buffers become the root's. */
    void fromRoot() {
        boolean root = group.rank() == DistributedBackend.ROOT_RANK;
        try (PointerScope temporaries = new PointerScope()) {
            for (Packed p : packs) {
                if (root) {
                    p.flat.packAll(p.buffers);
                }
                group.broadcast(p.flat.buffer, DistributedBackend.ROOT_RANK).await();
                if (!root) {
                    p.flat.unpackAll(p.buffers);
                }
            }
        }
    }

    /** The buffers of one element type and their places in one flat buffer. */
    private record Packed(List<Tensor> buffers, FlatBuffer flat) {
        Packed(DataType type, List<Tensor> buffers) {
            this(buffers, FlatBuffer.packing(type, buffers));
        }
    }
}
