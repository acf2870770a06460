package dev.cohort.torch;

import dev.cohort.api.steps.TrainingSteps;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorBase;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.VoidTensorHook;

/**
 * Marks where backward starts in each step ({@link TrainingSteps#backwardStarted}): a gradient
 * hook on the last registered parameter that takes gradients — usually the output layer's, whose
 * gradient backward computes first — so that the step's computing splits into forward and
 * backward, with or without overlap and at every ZeRO stage.
 */
final class BackwardMark {

    private BackwardMark() {}

    /** Hooks the last of {@code params} that takes gradients, if any. */
    static void on(TensorVector params) {
        for (long i = params.size() - 1; i >= 0; i--) {
            Tensor p = params.get(i);
            if (p.requires_grad()) {
                p.register_hook(LiveHooks.keep(new VoidTensorHook() {
                    @Override
                    public void call(TensorBase grad) {
                        TrainingSteps.backwardStarted();
                    }
                }));
                return;
            }
        }
    }
}
