package dev.cohort.spark.ml;

/**
 * Makes the model {@link CohortEstimator} trains and {@link CohortModel} predicts with. An
 * implementation needs a public no-argument constructor and must be on the executors' class path
 * (the application jar); {@link CohortEstimator#setModelFactory} names it.
 */
public interface TorchModelFactory {

    /**
     * A fresh model for rows of {@code width} features and {@code classes} classes, its weights
     * drawn from libtorch's generator (seeded before this is called).
     */
    TorchClassifier create(int width, int classes);
}
