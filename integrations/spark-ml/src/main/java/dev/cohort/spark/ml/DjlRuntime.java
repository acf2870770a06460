package dev.cohort.spark.ml;

import ai.djl.MalformedModelException;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDManager;
import ai.djl.nn.Block;
import dev.cohort.djl.DjlEngines;
import dev.cohort.libtorch.LibTorch;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Optional;

/** DJL's PyTorch engine for the {@code djl} framework: whether it can run here, loading it, and a block's weights as bytes. */
final class DjlRuntime {

    /** DJL's engine. */
    static final String ENGINE = "PyTorch";

    /** Classes a JVM needs for the djl framework, and the artifacts that bring them. */
    private static final String[][] NEEDED = {
        {"ai.djl.engine.Engine", "ai.djl:api"},
        {"ai.djl.pytorch.engine.PtEngine", "ai.djl.pytorch:pytorch-engine (with pytorch-jni and pytorch-native-cpu)"},
        {"dev.cohort.djl.DistributedTrainer", "dev.cohort:cohort-djl"},
    };

    private DjlRuntime() {}

    /**
     * Checks that this JVM can train or predict with DJL; {@code where} names it in the error.
     *
     * @throws IllegalArgumentException naming what is missing and how to add it
     */
    static void checkAvailable(String where) {
        ClassLoader loader = loader();
        for (String[] need : NEEDED) {
            try {
                Class.forName(need[0], false, loader);
            } catch (ClassNotFoundException | LinkageError e) {
                throw new IllegalArgumentException("framework djl needs " + need[1] + " on the class path of " + where
                        + " (" + need[0] + " is missing): add it to the application's dependencies, or to "
                        + "spark-submit --packages");
            }
        }
    }

    /**
     * Loads DJL's PyTorch engine (offline: its natives come from the class path) with {@code
     * threads} compute threads, unless it is loaded already.
     *
     * @throws IllegalStateException when JavaCPP's libtorch is loaded in this JVM: two libtorch
     *     builds cannot share a process
     */
    static Engine load(int threads) {
        Optional<String> javacpp = LibTorch.javacppLibtorch();
        if (javacpp.isPresent()) {
            throw new IllegalStateException(
                    "this JVM has loaded JavaCPP's libtorch (" + javacpp.get() + ", for a model "
                            + "of framework torch), and DJL's PyTorch engine cannot load beside it: two libtorch builds cannot "
                            + "share a process. Use one framework per Spark application, or predict with the djl model in "
                            + "another one");
        }
        System.setProperty("ai.djl.offline", "true");
        System.setProperty("ai.djl.pytorch.num_threads", Integer.toString(threads));
        System.setProperty("ai.djl.pytorch.num_interop_threads", "1");
        return DjlEngines.load(ENGINE);
    }

    /** {@code block}'s parameters in DJL's own format ({@link Block#saveParameters}). */
    static byte[] weights(Block block) {
        try {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            try (DataOutputStream out = new DataOutputStream(bytes)) {
                block.saveParameters(out);
            }
            return bytes.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the model's weights", e);
        }
    }

    /**
     * Loads {@code weights} into {@code block} (initialized).
     *
     * @throws IllegalArgumentException when they are not this block's (another factory, width or
     *     number of classes)
     */
    static void load(Block block, byte[] weights, NDManager manager) {
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(weights))) {
            block.loadParameters(manager, in);
        } catch (IOException | MalformedModelException | RuntimeException e) {
            throw new IllegalArgumentException(
                    "the saved weights do not fit the model the factory made: " + e.getMessage(), e);
        }
    }

    private static ClassLoader loader() {
        ClassLoader context = Thread.currentThread().getContextClassLoader();
        return context != null ? context : DjlRuntime.class.getClassLoader();
    }
}
