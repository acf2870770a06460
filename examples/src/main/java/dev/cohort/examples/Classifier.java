package dev.cohort.examples;

import java.util.Locale;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Tensor;

/**
 * A Fashion-MNIST classifier: a libtorch module (its submodules registered, so {@code parameters()},
 * {@code save} and {@code load} see them) with a forward pass from images {@code [B, 1, 28, 28]} to
 * class scores {@code [B, 10]} (logits).
 */
public abstract class Classifier extends Module {

    /** Class scores (logits) for a batch of normalized images {@code [B, 1, 28, 28]}. */
    public abstract Tensor forward(Tensor images);

    /** The models {@code --model} can name. */
    public enum Kind {
        MLP,
        CNN;

        /** A fresh model of this kind, initialized from libtorch's generator (seed it first). */
        public Classifier create() {
            return switch (this) {
                case MLP -> new Mlp();
                case CNN -> new SmallCnn();
            };
        }

        /** The lower-case name used on the command line and in summaries. */
        public String label() {
            return name().toLowerCase(Locale.ROOT);
        }
    }
}
