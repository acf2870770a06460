package dev.cohort.examples;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/** The installed Fashion-MNIST, or a skipped test when it is not installed. */
final class RealData {

    static final Path DIR = Path.of(FashionMnist.DEFAULT_DIR);

    private RealData() {}

    static FashionMnist loadOrSkip() throws IOException {
        assumeInstalled();
        return FashionMnist.load(DIR);
    }

    /** Skips the test where Fashion-MNIST is not installed. */
    static void assumeInstalled() {
        assumeTrue(
                Files.isDirectory(DIR),
                "Fashion-MNIST is not installed in " + DIR + " (apt-get install -y " + FashionMnist.DEBIAN_PACKAGE
                        + ")");
    }

    /** On a test class ({@code @ExtendWith(RealData.Required.class)}): skips it where the data is not installed. */
    static final class Required implements BeforeAllCallback {
        @Override
        public void beforeAll(ExtensionContext context) throws IOException {
            loadOrSkip();
        }
    }
}
