package dev.cohort.examples;

import static org.bytedeco.pytorch.global.torch.max_pool2d;
import static org.bytedeco.pytorch.global.torch.relu;

import org.bytedeco.javacpp.LongPointer;
import org.bytedeco.pytorch.Conv2dImpl;
import org.bytedeco.pytorch.Conv2dOptions;
import org.bytedeco.pytorch.LinearImpl;
import org.bytedeco.pytorch.Tensor;

/**
 * A small convolutional network: conv 5x5 (1 to 32 channels) - ReLU - max-pool 2 - conv 5x5 (32 to
 * 64) - ReLU - max-pool 2 - linear (64x4x4 = 1024 to 128) - ReLU - linear (128 to 10). Feature maps:
 * 28 -> 24 -> 12 -> 8 -> 4.
 */
public final class SmallCnn extends Classifier {

    private static final int FEATURES = 64 * 4 * 4;

    private final Conv2dImpl conv1;
    private final Conv2dImpl conv2;
    private final LinearImpl fc1;
    private final LinearImpl fc2;

    public SmallCnn() {
        conv1 = register_module("conv1", new Conv2dImpl(new Conv2dOptions(1, 32, new LongPointer(5L, 5L))));
        conv2 = register_module("conv2", new Conv2dImpl(new Conv2dOptions(32, 64, new LongPointer(5L, 5L))));
        fc1 = register_module("fc1", new LinearImpl(FEATURES, 128));
        fc2 = register_module("fc2", new LinearImpl(128, FashionMnist.CLASSES));
    }

    @Override
    public Tensor forward(Tensor images) {
        Tensor x = max_pool2d(relu(conv1.forward(images)), 2, 2);
        x = max_pool2d(relu(conv2.forward(x)), 2, 2);
        x = relu(fc1.forward(x.reshape(x.size(0), FEATURES)));
        return fc2.forward(x);
    }
}
