package dev.cohort.spark.ml;

import dev.cohort.libtorch.LibTorch;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.bytedeco.javacpp.FloatPointer;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;

/**
 * A trained model in this JVM, for predictions: made and loaded once per JVM (an executor's tasks
 * share it) and kept for the model's {@code uid}, then run on batches of rows with gradients off.
 */
record TorchInference(TorchClassifier model, ModelSpec spec) {

    private static final Map<String, TorchInference> LOADED = new ConcurrentHashMap<>();

    /** The model {@code key} names in this JVM, made from {@code spec} and {@code weights} the first time. */
    static TorchInference of(String key, ModelSpec spec, byte[] weights) {
        return LOADED.computeIfAbsent(key, k -> {
            LibTorch.load();
            TorchClassifier model = spec.create();
            TorchWeights.load(model, weights);
            model.eval();
            return new TorchInference(model, spec);
        });
    }

    /** Forgets the model {@code key} names (the next {@link #of} loads it again). */
    static void forget(String key) {
        LOADED.remove(key);
    }

    /**
     * The class probabilities of {@code rows} rows of features, row after row in {@code features};
     * {@code rows * classes} values, row after row.
     */
    float[] probabilities(float[] features, int rows) {
        // The scope frees the pass's native tensors at once; left to the GC, they pile up until
        // JavaCPP's accounting forces collections.
        try (PointerScope scope = new PointerScope();
                NoGradGuard noGrad = new NoGradGuard();
                FloatPointer in = new FloatPointer(features)) {
            Tensor x = torch.from_blob(in, new long[] {rows, spec.width()}, new TensorOptions(torch.ScalarType.Float));
            Tensor p = torch.softmax(model.forward(x), 1).contiguous();
            float[] out = new float[rows * spec.classes()];
            new FloatPointer(p.data_ptr_float()).get(out, 0, out.length);
            return out;
        }
    }
}
