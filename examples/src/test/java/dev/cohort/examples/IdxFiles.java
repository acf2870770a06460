package dev.cohort.examples;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.GZIPOutputStream;

/** Writes small IDX files for tests. */
final class IdxFiles {

    private IdxFiles() {}

    /** The bytes of an IDX file: {@code magic}, the sizes, then {@code data}. */
    static byte[] idx(int magic, int[] dims, byte[] data) {
        ByteBuffer b = ByteBuffer.allocate(4 + 4 * dims.length + data.length);
        b.putInt(magic);
        for (int d : dims) {
            b.putInt(d);
        }
        b.put(data);
        return b.array();
    }

    /** {@code n} images of 28x28 whose pixels are the image's index. */
    static byte[] images(int n) {
        byte[] data = new byte[n * FashionMnist.PIXELS];
        for (int i = 0; i < data.length; i++) {
            data[i] = (byte) (i / FashionMnist.PIXELS);
        }
        return idx(IdxFile.IMAGES_MAGIC, new int[] {n, 28, 28}, data);
    }

    /** {@code n} labels 0, 1, ..., 9, 0, ... */
    static byte[] labels(int n) {
        byte[] data = new byte[n];
        for (int i = 0; i < n; i++) {
            data[i] = (byte) (i % 10);
        }
        return idx(IdxFile.LABELS_MAGIC, new int[] {n}, data);
    }

    static byte[] gzip(byte[] bytes) throws IOException {
        ByteArrayOutputStream buffer = new ByteArrayOutputStream();
        try (OutputStream out = new GZIPOutputStream(buffer)) {
            out.write(bytes);
        }
        return buffer.toByteArray();
    }

    static Path write(Path file, byte[] bytes) throws IOException {
        Files.write(file, bytes);
        return file;
    }

    /** A complete split {@code prefix} (train or t10k) of {@code n} examples, gzip'd, in {@code dir}. */
    static void writeSplit(Path dir, String prefix, int n) throws IOException {
        write(dir.resolve(prefix + "-images-idx3-ubyte.gz"), gzip(images(n)));
        write(dir.resolve(prefix + "-labels-idx1-ubyte.gz"), gzip(labels(n)));
    }
}
