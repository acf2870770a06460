package dev.cohort.spark.ml;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The demo on Spark ({@link FashionMnistDemo}, what {@code ./cohort demo --spark} runs): Fashion-MNIST
 * as a Spark user holds it (Parquet files read into a DataFrame, the pixels an array column), fitted
 * on two workers of {@code local[2]}, each a JVM of its own fed its partition by its task, and
 * evaluated with Spark's own evaluator on the test rows.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class FashionMnistFitTest extends OnLocalSpark {

    @TempDir
    Path dir;

    @Test
    void oneEpochOnTwoWorkersReachesTheDemosAccuracy() {
        FashionMnistDemo.Outcome outcome = demoOneEpochOnTwoWorkers(dir, "--backend", "tcp");

        CohortModel model = outcome.model();
        assertThat(model.numFeatures()).isEqualTo(784);
        assertThat(model.numClasses()).isEqualTo(10);
        assertThat(model.history()).hasSize(1);
        EpochStats epoch = model.history().get(0);
        assertThat(epoch.loss()).isBetween(0.1, 1.0);
        assertThat(epoch.samplesPerSec()).isPositive();
        assertThat(model.streamSeconds()).isPositive();
        System.out.printf("Fashion-MNIST, 1 epoch on 2 workers: test accuracy %.4f%n", outcome.testAccuracy());
        assertThat(outcome.testAccuracy()).isGreaterThanOrEqualTo(0.85);
    }
}
