package dev.cohort.spark.ml;

import ai.djl.nn.Block;

/**
 * Makes the model {@link CohortEstimator} trains and {@link CohortModel} predicts with when the
 * framework is {@code djl}: a DJL {@link Block} from a batch of feature rows {@code [B, width]}
 * (float32) to class scores {@code [B, classes]} (logits). An implementation needs a public
 * no-argument constructor and must be on the executors' class path (the application jar);
 * {@link CohortEstimator#setModelFactory} names it. Build the block only: Cohort initializes it
 * (seeded) on DJL's PyTorch engine.
 */
public interface DjlModelFactory {

    /** A fresh, uninitialized block for rows of {@code width} features and {@code classes} classes. */
    Block create(int width, int classes);
}
