package dev.cohort.spark.ml;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.cohort.data.Convert;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.apache.spark.ml.evaluation.MulticlassClassificationEvaluator;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Fashion-MNIST as a Spark user holds it (Parquet files read into a DataFrame, the pixels an array
 * column), fitted on two workers of {@code local[2]}, each a JVM of its own fed its partition by its
 * task, and evaluated with Spark's own evaluator on the test rows.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class FashionMnistFitTest extends OnLocalSpark {

    private static final Path DATA = Path.of("/usr/share/datasets/fashion-mnist");

    @TempDir
    static Path dir;

    private static Dataset<Row> train;
    private static Dataset<Row> test;

    @BeforeAll
    static void data() {
        assumeTrue(
                Files.isDirectory(DATA),
                "Fashion-MNIST is not installed in " + DATA + " (apt-get install dataset-fashion-mnist)");
        Convert.idx(
                DATA.resolve("train-images-idx3-ubyte.gz"),
                DATA.resolve("train-labels-idx1-ubyte.gz"),
                dir.resolve("train").toString(),
                10_000,
                30_000);
        Convert.idx(
                DATA.resolve("t10k-images-idx3-ubyte.gz"),
                DATA.resolve("t10k-labels-idx1-ubyte.gz"),
                dir.resolve("test").toString(),
                10_000,
                10_000);
        train = spark.read().parquet(dir.resolve("train").toString());
        test = spark.read().parquet(dir.resolve("test").toString());
    }

    @Test
    void oneEpochOnTwoWorkersReachesTheDemosAccuracy() {
        CohortModel model = new CohortEstimator()
                .setNumWorkers(2)
                .setEpochs(1)
                .setBatchSize(32)
                .setEngine("tcp")
                .fit(train);

        assertThat(model.numFeatures()).isEqualTo(784);
        assertThat(model.numClasses()).isEqualTo(10);
        assertThat(model.history()).hasSize(1);
        EpochStats epoch = model.history().get(0);
        assertThat(epoch.loss()).isBetween(0.1, 1.0);
        assertThat(epoch.samplesPerSec()).isPositive();

        Dataset<Row> predicted = model.transform(test);
        assertThat(predicted.columns()).contains("features", "label", "prediction", "probability");
        double accuracy = new MulticlassClassificationEvaluator()
                .setLabelCol("label")
                .setPredictionCol("prediction")
                .setMetricName("accuracy")
                .evaluate(predicted.selectExpr("cast(label as double) label", "prediction"));
        System.out.printf("Fashion-MNIST, 1 epoch on 2 workers: test accuracy %.4f%n", accuracy);
        assertThat(accuracy).isGreaterThanOrEqualTo(0.85);
    }
}
