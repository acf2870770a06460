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
        float[] features = new float[examples * WIDTH];
        int[] labels = new int[examples];
        for (int i = 0; i < examples; i++) {
            labels[i] = i;
            for (int k = 0; k < WIDTH; k++) {
                features[i * WIDTH + k] = feature(i, k);
            }
        }
        return ShardWriter.to(dir)
                .columns(columns)
                .rowsPerRowGroup(rowsPerRowGroup)
                .rowsPerFile(rowsPerFile)
                .write(features, WIDTH, labels);
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
