package dev.cohort.torch;

import java.util.Objects;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/** A dataset held in two tensors whose first dimension indexes the examples. */
public final class TensorSamples implements Samples {

    private final Tensor inputs;
    private final Tensor targets;

    public TensorSamples(Tensor inputs, Tensor targets) {
        this.inputs = Objects.requireNonNull(inputs, "inputs");
        this.targets = Objects.requireNonNull(targets, "targets");
        if (inputs.size(0) != targets.size(0)) {
            throw new IllegalArgumentException(
                    "inputs hold " + inputs.size(0) + " examples but targets " + targets.size(0));
        }
    }

    @Override
    public long size() {
        return inputs.size(0);
    }

    @Override
    public MiniBatch get(long[] indices) {
        Tensor index = torch.tensor(indices);
        return new MiniBatch(inputs.index_select(0, index), targets.index_select(0, index));
    }

    public Tensor inputs() {
        return inputs;
    }

    public Tensor targets() {
        return targets;
    }
}
