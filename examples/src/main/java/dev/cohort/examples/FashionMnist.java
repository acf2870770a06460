package dev.cohort.examples;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Fashion-MNIST (Zalando Research): 28x28 grey images of clothing in 10 classes, 60,000 for
 * training and 10,000 for testing, as the four IDX files of the original distribution.
 *
 * <p>Debian's package {@code dataset-fashion-mnist} installs them, gzip'd, in
 * {@value #DEFAULT_DIR}. Each file is looked up as {@code NAME.gz}, then as plain {@code NAME}.
 *
 * @param train the training split
 * @param test  the test split
 */
public record FashionMnist(Split train, Split test) {

    /** Where Debian's {@code dataset-fashion-mnist} puts the files. */
    public static final String DEFAULT_DIR = "/usr/share/datasets/fashion-mnist";
    /** The Debian package that provides them. */
    public static final String DEBIAN_PACKAGE = "dataset-fashion-mnist";

    public static final int ROWS = 28;
    public static final int COLUMNS = 28;
    public static final int PIXELS = ROWS * COLUMNS;
    public static final int CLASSES = 10;
    /** Mean and standard deviation of the training pixels scaled to [0, 1], for normalization. */
    public static final float MEAN = 0.2860f;

    public static final float STD = 0.3530f;

    /** The class names, by label. */
    public static final String[] CLASS_NAMES = {
        "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"
    };

    /**
     * One split: {@code count} images of {@link #PIXELS} unsigned bytes, row-major, and their labels.
     *
     * @param pixels {@code count * PIXELS} bytes, image after image
     * @param labels {@code count} labels in {@code [0, CLASSES)}
     */
    public record Split(int count, byte[] pixels, byte[] labels) {

        /** The images scaled to [0, 1] and normalized with {@link #MEAN} and {@link #STD}. */
        public float[] normalizedPixels() {
            float[] x = new float[pixels.length];
            for (int i = 0; i < x.length; i++) {
                x[i] = ((pixels[i] & 0xFF) / 255f - MEAN) / STD;
            }
            return x;
        }

        /** The labels as longs (what {@code nll_loss} wants). */
        public long[] longLabels() {
            long[] y = new long[count];
            for (int i = 0; i < count; i++) {
                y[i] = labels[i];
            }
            return y;
        }
    }

    /**
     * Reads and checks both splits from {@code dir}.
     *
     * @throws DataFileException naming the file and what was wrong: missing (with how to get it),
     *                           truncated, corrupt, wrong magic number, wrong image size, image and
     *                           label counts that differ, labels out of range
     */
    public static FashionMnist load(Path dir) throws DataFileException {
        if (!Files.isDirectory(dir)) {
            throw new DataFileException(dir, "the Fashion-MNIST directory does not exist; " + howToGet(dir));
        }
        return new FashionMnist(loadSplit(dir, "train"), loadSplit(dir, "t10k"));
    }

    /** Reads one split: {@code prefix} is {@code train} or {@code t10k}. */
    static Split loadSplit(Path dir, String prefix) throws DataFileException {
        IdxFile images = IdxFile.read(find(dir, prefix + "-images-idx3-ubyte"), IdxFile.IMAGES_MAGIC);
        IdxFile labels = IdxFile.read(find(dir, prefix + "-labels-idx1-ubyte"), IdxFile.LABELS_MAGIC);
        int[] dims = images.dimensions();
        if (dims[1] != ROWS || dims[2] != COLUMNS) {
            throw new DataFileException(
                    images.file(), "images are " + dims[1] + "x" + dims[2] + ", expected " + ROWS + "x" + COLUMNS);
        }
        if (images.count() != labels.count()) {
            throw new DataFileException(
                    labels.file(),
                    "holds " + labels.count() + " labels but " + images.file().getFileName() + " holds "
                            + images.count() + " images; the counts must match");
        }
        byte[] y = labels.data();
        for (int i = 0; i < y.length; i++) {
            if ((y[i] & 0xFF) >= CLASSES) {
                throw new DataFileException(
                        labels.file(), "label " + i + " is " + (y[i] & 0xFF) + ", expected 0.." + (CLASSES - 1));
            }
        }
        return new Split(images.count(), images.data(), y);
    }

    private static Path find(Path dir, String name) throws DataFileException {
        Path gz = dir.resolve(name + ".gz");
        if (Files.exists(gz)) {
            return gz;
        }
        Path plain = dir.resolve(name);
        if (Files.exists(plain)) {
            return plain;
        }
        throw new DataFileException(gz, "file not found (nor " + plain.getFileName() + "); " + howToGet(dir));
    }

    /** What to run to get the files into {@code dir}. */
    static String howToGet(Path dir) {
        if (dir.equals(Path.of(DEFAULT_DIR))) {
            return "install them with: sudo apt-get install -y " + DEBIAN_PACKAGE;
        }
        return "put the four Fashion-MNIST IDX files there (train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, "
                + "t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz), or install Debian's " + DEBIAN_PACKAGE
                + " and use --data-dir " + DEFAULT_DIR;
    }
}
