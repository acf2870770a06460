package dev.cohort.spark.ml;

import static org.apache.spark.ml.functions.array_to_vector;
import static org.apache.spark.sql.functions.expr;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Framework {@code djl}: the demo's MLP as a DJL block, fitted on two workers of {@code local[2]}
 * (each a JVM of its own training through DJL's PyTorch engine and Cohort's DJL integration),
 * scored by Spark's evaluator, then saved, loaded back and predicting the same. A JVM of its own
 * (surefire forks one per test class): DJL's libtorch cannot share one with JavaCPP's.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class DjlFrameworkTest extends OnLocalSpark {

    @TempDir
    Path dir;

    @Test
    void oneEpochOnTwoWorkersReachesTheDemosAccuracyAndTheSavedModelPredictsTheSame() throws IOException {
        FashionMnistDemo.Outcome outcome = demoOneEpochOnTwoWorkers(dir, "--framework", "djl");

        CohortModel model = outcome.model();
        assertThat(model.getFramework()).isEqualTo("djl");
        assertThat(model.history()).hasSize(1);
        assertThat(model.history().get(0).loss()).isBetween(0.1, 1.0);
        System.out.printf("Fashion-MNIST on DJL, 1 epoch on 2 workers: test accuracy %.4f%n", outcome.testAccuracy());
        assertThat(outcome.testAccuracy()).isGreaterThanOrEqualTo(0.85);

        String saved = dir.resolve("model").toString();
        model.write().save(saved);
        assertThat(dir.resolve("model/weights.params")).isRegularFile();
        CohortModel loaded = CohortModel.load(saved);
        assertThat(loaded.getFramework()).isEqualTo("djl");
        Dataset<Row> rows = spark.read()
                .parquet(dir.resolve("t10k").toString())
                .limit(500)
                .select(array_to_vector(expr(FashionMnistDemo.STANDARDIZED_FEATURES))
                        .as("features"))
                .cache();
        List<Row> before =
                model.transform(rows).select("prediction", "probability").collectAsList();
        List<Row> after =
                loaded.transform(rows).select("prediction", "probability").collectAsList();
        assertThat(after).hasSize(500).isEqualTo(before);
    }
}
