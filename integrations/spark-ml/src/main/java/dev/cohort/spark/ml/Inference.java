package dev.cohort.spark.ml;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A trained model in this JVM, for predictions: made and loaded once per JVM (an executor's tasks
 * share it) and kept under a key of the model's, then run on batches of rows with gradients off.
 */
interface Inference {

    /**
     * The class probabilities of {@code rows} rows of features, row after row in {@code features};
     * {@code rows * classes} values, row after row. Called by several task threads at once.
     */
    float[] probabilities(float[] features, int rows);

    /**
     * Sets the compute threads of the calling task thread's forward passes, where the framework
     * lets a thread choose (JavaCPP's libtorch does; DJL sets them once, as its engine loads).
     */
    void useThreads(int threads);

    /**
     * The model {@code key} names in this JVM, made from {@code spec} and {@code weights} the first
     * time; {@code threads}: compute threads per forward pass, where the framework sets them once.
     */
    static Inference of(String key, ModelSpec spec, byte[] weights, int threads) {
        return Loaded.MODELS.computeIfAbsent(key, k -> switch (spec.framework()) {
            case TORCH -> TorchInference.load(spec, weights);
            case DJL -> DjlInference.load(spec, weights, threads);
        });
    }

    /** Forgets the model {@code key} names (the next {@link #of} loads it again). */
    static void forget(String key) {
        Loaded.MODELS.remove(key);
    }

    /** The models of this JVM. */
    final class Loaded {
        private static final Map<String, Inference> MODELS = new ConcurrentHashMap<>();

        private Loaded() {}
    }
}
