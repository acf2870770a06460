package dev.cohort.spark.ml;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.training.ParameterStore;
import java.nio.FloatBuffer;

/** A DJL model for predictions ({@link Inference}). */
record DjlInference(Block block, NDManager manager, ModelSpec spec) implements Inference {

    static DjlInference load(ModelSpec spec, byte[] weights, int threads) {
        DjlRuntime.load(threads);
        NDManager manager = NDManager.newBaseManager(Device.cpu(), DjlRuntime.ENGINE);
        Block block = ModelFactories.djl(spec.factory(), spec.width(), spec.classes());
        block.initialize(manager, DataType.FLOAT32, new Shape(1, spec.width()));
        DjlRuntime.load(block, weights, manager);
        return new DjlInference(block, manager, spec);
    }

    @Override
    public void useThreads(int threads) {
        // DJL's engine took its threads as it loaded (DjlRuntime.load).
    }

    @Override
    public float[] probabilities(float[] features, int rows) {
        try (NDManager arrays = manager.newSubManager()) {
            NDArray x =
                    arrays.create(FloatBuffer.wrap(features, 0, rows * spec.width()), new Shape(rows, spec.width()));
            NDArray scores = block.forward(new ParameterStore(arrays, false), new NDList(x), false)
                    .singletonOrThrow();
            return scores.softmax(1).toFloatArray();
        }
    }
}
