package dev.cohort.spark.ml;

import static org.bytedeco.pytorch.global.torch.relu;

import java.util.ArrayList;
import java.util.List;
import org.bytedeco.pytorch.LinearImpl;
import org.bytedeco.pytorch.Tensor;

/** The default model: a multi-layer perceptron, width - 512 - 256 - classes, with ReLU between. */
public final class MlpFactory implements TorchModelFactory {

    @Override
    public TorchClassifier create(int width, int classes) {
        return new Mlp(width, 512, 256, classes);
    }

    /** Fully connected layers of the given sizes, ReLU between them. */
    static final class Mlp extends TorchClassifier {

        private final List<LinearImpl> layers = new ArrayList<>();

        Mlp(int... sizes) {
            for (int i = 0; i + 1 < sizes.length; i++) {
                layers.add(register_module("fc" + (i + 1), new LinearImpl(sizes[i], sizes[i + 1])));
            }
        }

        @Override
        public Tensor forward(Tensor features) {
            Tensor x = features;
            for (int i = 0; i < layers.size(); i++) {
                x = layers.get(i).forward(x);
                if (i + 1 < layers.size()) {
                    x = relu(x);
                }
            }
            return x;
        }
    }
}
