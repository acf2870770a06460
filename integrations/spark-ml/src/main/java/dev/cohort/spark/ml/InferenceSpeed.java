package dev.cohort.spark.ml;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;

/**
 * How fast {@link CohortModel#transform} predicts, against a plain libtorch loop over the same rows
 * in this JVM: the measurement behind {@code ./cohort demo --spark ... --measure-inference}.
 *
 * <p>The rows are first put in as many partitions as Spark has task slots and cached, so that a
 * pass times transform on every slot and not the work that made its input. The loop runs on as
 * many threads as there are slots, one libtorch thread each, every thread over its share of the
 * rows, already as floats in memory, in batches of {@link Predictor#BATCH}: per core, it is what
 * transform could reach with no Spark in the way. (Both use every core: on a machine whose cores
 * slow each other down, a loop on one core of an idle machine would be no fair measure.) The
 * passes alternate, so that all meet the machine in the same state; each figure is the median of
 * {@code rounds} passes after one untimed pass of each. A third pass, Spark's {@code mapPartitions}
 * giving every row back unchanged, times what any transform over rows pays to take and give them:
 * with the loop's time, the bound on transform's speed.
 */
final class InferenceSpeed {

    /**
     * @param rows the rows each pass predicts
     * @param slots Spark's task slots, and the loop's threads
     * @param transformRowsPerSec {@code transform}, every row's prediction written to Spark's no-op sink
     * @param loopRowsPerSec the loop, on all its threads together
     * @param rowTripRowsPerSec the rows through Spark's {@code mapPartitions} unchanged
     */
    record Figures(long rows, int slots, double transformRowsPerSec, double loopRowsPerSec, double rowTripRowsPerSec) {

        /** The fastest transform could be: the rows' trip through Spark, then the loop's work. */
        double boundRowsPerSec() {
            return 1 / (1 / loopRowsPerSec + 1 / rowTripRowsPerSec);
        }
    }

    private InferenceSpeed() {}

    static Figures measure(CohortModel model, Dataset<Row> input, String featuresCol, int rounds) {
        int slots = input.sparkSession().sparkContext().defaultParallelism();
        Dataset<Row> rows = input.repartition(slots).cache();
        long count = rows.count();
        Dataset<Row> scored = model.transform(rows);
        Dataset<Row> unchanged =
                rows.mapPartitions((MapPartitionsFunction<Row, Row>) it -> it, Encoders.row(rows.schema()));
        ModelSpec spec = model.spec();
        float[] features = features(rows.select(featuresCol).collectAsList(), spec.width());
        ExecutorService threads = Executors.newFixedThreadPool(slots);
        String key = "speed@" + model.uid();
        double[] transform = new double[rounds];
        double[] loop = new double[rounds];
        double[] trip = new double[rounds];
        try {
            Inference inference = Inference.of(key, spec, model.weights(), 1);
            for (int r = -1; r < rounds; r++) { // pass -1 loads and compiles
                long start = System.nanoTime();
                scored.write().format("noop").mode("overwrite").save();
                double transformed = count / ((System.nanoTime() - start) / 1e9);
                double looped = loop(threads, slots, inference, features, spec.width());
                start = System.nanoTime();
                unchanged.write().format("noop").mode("overwrite").save();
                double tripped = count / ((System.nanoTime() - start) / 1e9);
                if (r >= 0) {
                    transform[r] = transformed;
                    loop[r] = looped;
                    trip[r] = tripped;
                }
            }
        } finally {
            threads.shutdown();
            Inference.forget(key);
            rows.unpersist();
        }
        return new Figures(count, slots, median(transform), median(loop), median(trip));
    }

    /** One pass of the loop: rows/s of all {@code slots} threads together. */
    private static double loop(ExecutorService threads, int slots, Inference inference, float[] features, int width) {
        int n = features.length / width;
        long start = System.nanoTime();
        List<Future<?>> shares = new ArrayList<>();
        for (int s = 0; s < slots; s++) {
            int from = (int) ((long) n * s / slots);
            int to = (int) ((long) n * (s + 1) / slots);
            shares.add(threads.submit(() -> {
                inference.useThreads(1);
                for (int at = from; at < to; at += Predictor.BATCH) {
                    int m = Math.min(Predictor.BATCH, to - at);
                    inference.probabilities(Arrays.copyOfRange(features, at * width, (at + m) * width), m);
                }
            }));
        }
        try {
            for (Future<?> share : shares) {
                share.get();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while timing the libtorch loop", e);
        } catch (ExecutionException e) {
            throw new IllegalStateException("the libtorch loop failed", e.getCause());
        }
        return n / ((System.nanoTime() - start) / 1e9);
    }

    /** A vector column's values, row after row. */
    private static float[] features(List<Row> rows, int width) {
        float[] out = new float[rows.size() * width];
        int at = 0;
        for (Row row : rows) {
            for (double v : ((Vector) row.get(0)).toArray()) {
                out[at++] = (float) v;
            }
        }
        return out;
    }

    private static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int m = sorted.length / 2;
        return sorted.length % 2 == 1 ? sorted[m] : (sorted[m - 1] + sorted[m]) / 2;
    }
}
