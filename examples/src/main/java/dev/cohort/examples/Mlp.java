package dev.cohort.examples;

import static org.bytedeco.pytorch.global.torch.relu;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.bytedeco.pytorch.LinearImpl;
import org.bytedeco.pytorch.Tensor;

/** A multi-layer perceptron: 784 - hidden layers with ReLU - 10. */
public final class Mlp extends Classifier {

    /** The hidden layers of {@code --model mlp}. */
    static final int[] DEFAULT_HIDDEN = {512, 256};

    private final List<LinearImpl> layers = new ArrayList<>();

    /** 784 - 512 - 256 - 10. */
    public Mlp() {
        this(DEFAULT_HIDDEN);
    }

    /** 784 - {@code hidden[0]} - ... - 10. */
    public Mlp(int... hidden) {
        int[] sizes = new int[hidden.length + 2];
        sizes[0] = FashionMnist.PIXELS;
        System.arraycopy(hidden, 0, sizes, 1, hidden.length);
        sizes[sizes.length - 1] = FashionMnist.CLASSES;
        if (Arrays.stream(sizes).anyMatch(s -> s < 1)) {
            throw new IllegalArgumentException("layer sizes must be >= 1, got " + Arrays.toString(sizes));
        }
        for (int i = 0; i + 1 < sizes.length; i++) {
            layers.add(register_module("fc" + (i + 1), new LinearImpl(sizes[i], sizes[i + 1])));
        }
    }

    @Override
    public Tensor forward(Tensor images) {
        Tensor x = images.reshape(images.size(0), FashionMnist.PIXELS);
        for (int i = 0; i < layers.size(); i++) {
            x = layers.get(i).forward(x);
            if (i + 1 < layers.size()) {
                x = relu(x);
            }
        }
        return x;
    }
}
