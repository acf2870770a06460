package dev.cohort.data;

import java.util.List;
import java.util.SplittableRandom;

/**
 * A dataset of random examples, for benchmarks that need one of any size (the loader's memory
 * benchmark wants 4 GiB): features uniform in [0, 1), labels uniform in [0, {@value #CLASSES}),
 * all from one seed, written a chunk of rows at a time, so in the memory of about one row group.
 * The same seed, rows and width give the same examples.
 */
public final class SyntheticShards {

    /** The labels are 0 to {@code CLASSES - 1}. */
    public static final int CLASSES = 10;

    /** Features generated before they go to the writer (or one row's, if more). */
    private static final int CHUNK_FEATURES = 1 << 20;

    private SyntheticShards() {}

    /**
     * Writes {@code rows} random examples of {@code width} features into {@code writer}'s directory.
     *
     * @return the files written, in order
     */
    public static List<String> write(ShardWriter writer, long rows, int width, long seed) {
        if (rows < 1) {
            throw new IllegalArgumentException("rows must be >= 1, not " + rows);
        }
        int chunk = Math.max(1, CHUNK_FEATURES / LoaderOptions.positive(width, "width"));
        SplittableRandom random = new SplittableRandom(seed);
        float[] features = new float[chunk * width];
        int[] labels = new int[chunk];
        try (ShardWriter.Output out = writer.open(width)) {
            for (long done = 0; done < rows; ) {
                int n = (int) Math.min(chunk, rows - done);
                for (int i = 0; i < n * width; i++) {
                    features[i] = random.nextFloat();
                }
                for (int i = 0; i < n; i++) {
                    labels[i] = random.nextInt(CLASSES);
                }
                out.append(features, labels, n);
                done += n;
            }
            return out.finish();
        }
    }
}
