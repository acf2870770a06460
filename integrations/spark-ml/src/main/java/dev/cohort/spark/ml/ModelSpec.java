package dev.cohort.spark.ml;

import java.io.Serializable;

/**
 * What makes a fitted model's network again, wherever it runs: the {@link TorchModelFactory}
 * class, the features per row and the classes it was made for.
 */
record ModelSpec(String factory, int width, int classes) implements Serializable {

    /** A fresh, untrained model from the factory. */
    TorchClassifier create() {
        return ModelFactories.create(factory, width, classes);
    }
}
