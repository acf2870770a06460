package dev.cohort.spark.ml;

import dev.cohort.libtorch.LibTorch;
import java.io.Serializable;

/**
 * What makes a fitted model's network again, wherever it runs: its framework, the factory class
 * ({@link TorchModelFactory} or {@link DjlModelFactory}), the features per row and the classes it
 * was made for.
 */
record ModelSpec(Framework framework, String factory, int width, int classes) implements Serializable {

    /**
     * Checks that the factory is on this JVM's class path, of the framework's kind, and makes a
     * model with it (a torch model loads JavaCPP's libtorch; a DJL block is plain Java until it is
     * initialized).
     *
     * @throws IllegalArgumentException naming what is wrong
     */
    void check() {
        if (framework == Framework.DJL) {
            DjlRuntime.checkAvailable("this JVM");
            ModelFactories.djl(factory, width, classes);
        } else {
            LibTorch.load(); // extracts the natives first: a first tensor on an empty cache would crash the JVM
            ModelFactories.torch(factory, width, classes);
        }
    }
}
