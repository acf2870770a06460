package dev.cohort.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;

/** Loads DJL's PyTorch engine through {@link DjlEngines}, computes a sum and prints {@code OK}. */
public final class EngineLoadWorker {

    public static void main(String[] args) {
        DjlEngines.load("PyTorch");
        try (NDManager manager = NDManager.newBaseManager()) {
            NDArray sum = manager.create(new float[] {1, 2, 3}).sum();
            System.out.println(sum.getFloat() == 6f ? "OK" : "WRONG " + sum);
        }
    }
}
