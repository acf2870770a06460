package dev.cohort.torch;

import org.bytedeco.pytorch.Tensor;

/** One mini-batch: inputs and targets, first dimension = examples. */
public record MiniBatch(Tensor inputs, Tensor targets) {

    public long size() {
        return inputs.size(0);
    }
}
