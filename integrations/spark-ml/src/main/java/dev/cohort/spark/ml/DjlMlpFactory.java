package dev.cohort.spark.ml;

import ai.djl.nn.Activation;
import ai.djl.nn.Block;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;

/** The default model of the {@code djl} framework: {@link MlpFactory}'s layers as a DJL block. */
public final class DjlMlpFactory implements DjlModelFactory {

    @Override
    public Block create(int width, int classes) {
        return new SequentialBlock()
                .add(Linear.builder().setUnits(512).build())
                .add(Activation::relu)
                .add(Linear.builder().setUnits(256).build())
                .add(Activation::relu)
                .add(Linear.builder().setUnits(classes).build());
    }
}
