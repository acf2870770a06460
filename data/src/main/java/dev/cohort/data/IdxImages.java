package dev.cohort.data;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.GZIPInputStream;

/**
 * The unsigned-byte IDX files of MNIST and Fashion-MNIST (gzip'd when the name ends in .gz): a
 * big-endian header {@code 0x0000 08 NN} (NN dimensions), NN sizes, then the bytes. Images are
 * read as {@code count x (rows * columns)} floats scaled to [0, 1], labels as ints.
 */
final class IdxImages {

    private IdxImages() {}

    /** The sizes and the bytes of {@code file}, which must have {@code dimensions} dimensions. */
    private static int[] read(Path file, int dimensions, byte[][] data) {
        try (DataInputStream in = new DataInputStream(open(file))) {
            int magic = in.readInt();
            if (magic >>> 8 != 0x08 || (magic & 0xFF) != dimensions) {
                throw new IllegalArgumentException(file + ": not an unsigned-byte IDX file of " + dimensions
                        + " dimensions (magic number 0x" + Integer.toHexString(magic) + ")");
            }
            int[] sizes = new int[dimensions];
            long total = 1;
            for (int i = 0; i < dimensions; i++) {
                sizes[i] = in.readInt();
                total *= sizes[i];
            }
            if (total < 0 || total > Integer.MAX_VALUE) {
                throw new IllegalArgumentException(file + ": bad sizes in the header");
            }
            data[0] = new byte[(int) total];
            in.readFully(data[0]);
            if (in.read() >= 0) {
                throw new IllegalArgumentException(file + ": more bytes than the header announces");
            }
            return sizes;
        } catch (EOFException e) {
            throw new IllegalArgumentException(file + ": truncated (shorter than its header announces)", e);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file + ": " + e.getMessage(), e);
        }
    }

    private static InputStream open(Path file) throws IOException {
        InputStream raw = new BufferedInputStream(Files.newInputStream(file), 1 << 16);
        return file.getFileName().toString().endsWith(".gz") ? new GZIPInputStream(raw, 1 << 16) : raw;
    }

    /** Images and labels, checked to be as many. */
    record Examples(float[] features, int width, int[] labels) {}

    static Examples read(Path images, Path labels) {
        byte[][] pixels = new byte[1][];
        int[] imageSizes = read(images, 3, pixels);
        byte[][] classes = new byte[1][];
        int[] labelSizes = read(labels, 1, classes);
        if (imageSizes[0] != labelSizes[0]) {
            throw new IllegalArgumentException(images + " holds " + imageSizes[0] + " images but " + labels + " holds "
                    + labelSizes[0] + " labels");
        }
        float[] features = new float[pixels[0].length];
        for (int i = 0; i < features.length; i++) {
            features[i] = (pixels[0][i] & 0xFF) / 255f;
        }
        int[] out = new int[classes[0].length];
        for (int i = 0; i < out.length; i++) {
            out[i] = classes[0][i] & 0xFF;
        }
        return new Examples(features, imageSizes[1] * imageSizes[2], out);
    }
}
