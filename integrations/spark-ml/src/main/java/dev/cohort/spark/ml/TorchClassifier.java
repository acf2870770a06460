package dev.cohort.spark.ml;

import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Tensor;

/**
 * A libtorch classifier {@link CohortEstimator} trains: a module whose submodules are registered
 * (so {@code parameters()}, {@code save} and {@code load} see them) with a forward pass from a batch
 * of feature rows {@code [B, width]} (float) to class scores {@code [B, classes]} (logits).
 */
public abstract class TorchClassifier extends Module {

    /** Class scores (logits) for {@code features}, a float tensor {@code [B, width]}. */
    public abstract Tensor forward(Tensor features);
}
