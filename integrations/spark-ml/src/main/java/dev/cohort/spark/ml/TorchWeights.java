package dev.cohort.spark.ml;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.bytedeco.pytorch.InputArchive;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.OutputArchive;

/** A module's parameters and buffers as bytes, in libtorch's own archive format. */
final class TorchWeights {

    private TorchWeights() {}

    static byte[] of(Module model) {
        Path file = null;
        try {
            file = Files.createTempFile("cohort-weights-", ".pt");
            OutputArchive archive = new OutputArchive();
            model.save(archive);
            archive.save_to(file.toString());
            return Files.readAllBytes(file);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the model's weights", e);
        } finally {
            deleteQuietly(file);
        }
    }

    /**
     * Loads {@code weights} into {@code model}.
     *
     * @throws IllegalArgumentException when they are not this model's (another factory, width or
     *     number of classes)
     */
    static void load(Module model, byte[] weights) {
        Path file = null;
        try {
            file = Files.createTempFile("cohort-weights-", ".pt");
            Files.write(file, weights);
            InputArchive archive = new InputArchive();
            archive.load_from(file.toString());
            model.load(archive);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the model's weights", e);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException(
                    "the saved weights do not fit the model the factory made: " + e.getMessage(), e);
        } finally {
            deleteQuietly(file);
        }
    }

    private static void deleteQuietly(Path file) {
        if (file != null) {
            try {
                Files.deleteIfExists(file);
            } catch (IOException e) {
                // a temporary file left behind
            }
        }
    }
}
