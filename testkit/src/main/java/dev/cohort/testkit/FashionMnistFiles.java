package dev.cohort.testkit;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;

/** Where the tests find the real Fashion-MNIST: Debian's {@code dataset-fashion-mnist}. */
public final class FashionMnistFiles {

    /** The folder of the four IDX files (gzipped) that Debian's package installs. */
    public static final Path DIR = Path.of("/usr/share/datasets/fashion-mnist");

    private FashionMnistFiles() {}

    /** {@link #DIR}, the calling test skipped (with the package to install) where it is missing. */
    public static Path installed() {
        assumeTrue(
                Files.isDirectory(DIR),
                "Fashion-MNIST is not installed in " + DIR + " (apt-get install dataset-fashion-mnist)");
        return DIR;
    }
}
