package dev.cohort.examples;

import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.Block;
import ai.djl.nn.Blocks;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.convolutional.Conv2d;
import ai.djl.nn.core.Linear;
import ai.djl.nn.pooling.Pool;

/**
 * The demo's models as DJL blocks: the same layers as {@link Mlp} and {@link SmallCnn} (whose
 * classes must not be touched from DJL code: initializing them loads JavaCPP's libtorch).
 */
public final class DjlModels {

    private DjlModels() {}

    /** 784 - {@code hidden}... - 10, ReLU between: {@code mlp(512, 256)} is the demo's. */
    public static Block mlp(int... hidden) {
        SequentialBlock block = new SequentialBlock();
        for (int h : hidden) {
            block.add(Linear.builder().setUnits(h).build()).add(Activation::relu);
        }
        return block.add(Linear.builder().setUnits(FashionMnist.CLASSES).build());
    }

    /** As {@link SmallCnn}: conv 5x5 32 - ReLU - pool 2 - conv 5x5 64 - ReLU - pool 2 - linear 128 - ReLU - linear 10. */
    public static Block cnn() {
        SequentialBlock block = new SequentialBlock();
        addConvReluPool(block, 32);
        addConvReluPool(block, 64);
        return block.add(Blocks.batchFlattenBlock())
                .add(Linear.builder().setUnits(128).build())
                .add(Activation::relu)
                .add(Linear.builder().setUnits(FashionMnist.CLASSES).build());
    }

    /** Adds conv 5x5 of {@code filters} channels - ReLU - max pool 2 to {@code block} (flat, not nested). */
    private static void addConvReluPool(SequentialBlock block, int filters) {
        block.add(Conv2d.builder()
                        .setKernelShape(new Shape(5, 5))
                        .setFilters(filters)
                        .build())
                .add(Activation::relu)
                .add(Pool.maxPool2dBlock(new Shape(2, 2), new Shape(2, 2)));
    }
}
