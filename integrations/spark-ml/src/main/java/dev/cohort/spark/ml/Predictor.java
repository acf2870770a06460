package dev.cohort.spark.ml;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.ml.linalg.DenseVector;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.ml.linalg.Vectors;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;

/**
 * {@link CohortModel#transform}'s work in each partition: the rows in batches of {@value #BATCH}
 * through the model ({@link Inference}, loaded once per executor JVM), each row given back
 * with its prediction (and probabilities) appended, in order; a vector column {@code transform}
 * added for the features is left out.
 *
 * @param key the model's name in each executor JVM ({@link Inference#of})
 * @param spec the model's factory, features and classes
 * @param weights the trained weights, broadcast
 * @param columns the input's own columns, which each output row keeps
 * @param vector the index of the features' vector column: one of the input's own when its features
 *     are a vector already, else {@code columns} (the column {@code transform} added after them)
 * @param probabilities whether each row also gets the class probabilities
 */
record Predictor(String key, ModelSpec spec, Broadcast<byte[]> weights, int columns, int vector, boolean probabilities)
        implements MapPartitionsFunction<Row, Row> {

    /** Rows per forward pass. */
    static final int BATCH = 512;

    @Override
    public Iterator<Row> call(Iterator<Row> rows) {
        // libtorch's threads for this task thread's forward passes: the task's CPUs, so that the
        // executor's concurrent tasks do not each take every core (measured here: the demo MLP's
        // forward on 2 threads of 2 CPUs ran 8-10x slower than on 1).
        TaskContext task = TaskContext.get();
        int threads = task == null ? 1 : Math.max(1, task.cpus());
        Inference model = Inference.of(key, spec, weights.value(), threads);
        model.useThreads(threads);
        int width = spec.width();
        return new Iterator<>() {
            private final List<Row> batch = new ArrayList<>(BATCH);
            private final float[] features = new float[BATCH * width];
            private float[] scores;
            private int next;

            @Override
            public boolean hasNext() {
                if (next < batch.size()) {
                    return true;
                }
                fill();
                return !batch.isEmpty();
            }

            @Override
            public Row next() {
                if (!hasNext()) {
                    throw new NoSuchElementException();
                }
                int i = next++;
                return predicted(batch.get(i), scores, i);
            }

            private void fill() {
                batch.clear();
                next = 0;
                while (batch.size() < BATCH && rows.hasNext()) {
                    Row row = rows.next();
                    Vector v = row.getAs(vector);
                    if (v == null) {
                        throw new IllegalArgumentException("a row has no features (null): drop or fill it first");
                    }
                    if (v.size() != width) {
                        throw new IllegalArgumentException(
                                "a row has " + v.size() + " features; the model was " + "fitted on " + width);
                    }
                    double[] values = v instanceof DenseVector dense ? dense.values() : v.toArray();
                    int at = batch.size() * width;
                    for (int j = 0; j < width; j++) {
                        features[at + j] = (float) values[j];
                    }
                    batch.add(row);
                }
                if (!batch.isEmpty()) {
                    scores = model.probabilities(features, batch.size());
                }
            }
        };
    }

    private Row predicted(Row row, float[] scores, int i) {
        int classes = spec.classes();
        int best = 0;
        double[] p = new double[classes];
        for (int c = 0; c < classes; c++) {
            p[c] = scores[i * classes + c];
            if (p[c] > p[best]) {
                best = c;
            }
        }
        Object[] values = new Object[columns + (probabilities ? 2 : 1)];
        for (int c = 0; c < columns; c++) {
            values[c] = row.get(c);
        }
        values[columns] = (double) best;
        if (probabilities) {
            values[columns + 1] = Vectors.dense(p);
        }
        return RowFactory.create(values);
    }
}
