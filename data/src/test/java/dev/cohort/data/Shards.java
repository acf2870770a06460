package dev.cohort.data;

import java.nio.file.Path;
import java.util.List;

/** Test shards whose examples say who they are: example i has label i and features i + k / 1000. */
final class Shards {

    static final int WIDTH = 5;

    private Shards() {}

    static float feature(int example, int k) {
        return example + k / 1000f;
    }

    static List<String> write(Path dir, int examples, int rowsPerRowGroup, int rowsPerFile) {
        return write(dir.toString(), examples, rowsPerRowGroup, rowsPerFile, ColumnMapping.list("features", "label"));
    }

    static List<String> write(String dir, int examples, int rowsPerRowGroup, int rowsPerFile, ColumnMapping columns) {
        return writer(dir, rowsPerRowGroup, rowsPerFile)
                .columns(columns)
                .write(features(examples), WIDTH, labels(examples));
    }

    static ShardWriter writer(String dir, int rowsPerRowGroup, int rowsPerFile) {
        return ShardWriter.to(dir).rowsPerRowGroup(rowsPerRowGroup).rowsPerFile(rowsPerFile);
    }

    static float[] features(int examples) {
        float[] features = new float[examples * WIDTH];
        for (int i = 0; i < examples; i++) {
            for (int k = 0; k < WIDTH; k++) {
                features[i * WIDTH + k] = feature(i, k);
            }
        }
        return features;
    }

    static int[] labels(int examples) {
        int[] labels = new int[examples];
        java.util.Arrays.setAll(labels, i -> i);
        return labels;
    }

    /** Overwrites the start of {@code file}'s first page header (right after the magic bytes) with garbage. */
    static void corruptFirstPage(String file) throws java.io.IOException {
        try (java.io.RandomAccessFile raw = new java.io.RandomAccessFile(file, "rw")) {
            raw.seek(4);
            raw.write(new byte[] {(byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF});
        }
    }

    /** The labels of a batch, after checking that each row's features are its label's. */
    static int[] labelsChecked(Batch batch) {
        int[] labels = new int[batch.rows()];
        java.nio.FloatBuffer f = batch.features();
        java.nio.IntBuffer l = batch.intLabels();
        for (int r = 0; r < batch.rows(); r++) {
            labels[r] = l.get(r);
            for (int k = 0; k < batch.width(); k++) {
                if (f.get(r * batch.width() + k) != feature(labels[r], k)) {
                    throw new AssertionError("row " + r + " of a batch has the features of another example than "
                            + labels[r] + ": " + f.get(r * batch.width() + k));
                }
            }
        }
        return labels;
    }
}
