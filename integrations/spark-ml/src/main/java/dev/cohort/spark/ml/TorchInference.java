package dev.cohort.spark.ml;

import dev.cohort.libtorch.LibTorch;
import org.bytedeco.javacpp.FloatPointer;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;

/** A torch model for predictions ({@link Inference}). */
record TorchInference(TorchClassifier model, ModelSpec spec) implements Inference {

    static TorchInference load(ModelSpec spec, byte[] weights) {
        LibTorch.load();
        TorchClassifier model = ModelFactories.torch(spec.factory(), spec.width(), spec.classes());
        TorchWeights.load(model, weights);
        model.eval();
        return new TorchInference(model, spec);
    }

    @Override
    public void useThreads(int threads) {
        torch.set_num_threads(threads);
    }

    @Override
    public float[] probabilities(float[] features, int rows) {
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
