package dev.cohort.spark.ml;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.expr;
import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.data.Convert;
import dev.cohort.spark.StandaloneCluster;
import dev.cohort.testkit.FashionMnistFiles;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.apache.spark.ml.Pipeline;
import org.apache.spark.ml.PipelineModel;
import org.apache.spark.ml.PipelineStage;
import org.apache.spark.ml.evaluation.MulticlassClassificationEvaluator;
import org.apache.spark.ml.feature.VectorAssembler;
import org.apache.spark.ml.functions;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a Spark user does on a real cluster: a {@code Pipeline} of Spark's {@code VectorAssembler}
 * and {@link CohortEstimator} fitted on Fashion-MNIST across the two executors of a standalone
 * cluster ({@link StandaloneCluster}: a master and two workers, every one a JVM of its own), the
 * fitted {@code PipelineModel} saved, loaded back and scored on the test rows by Spark's evaluator.
 */
@Timeout(value = 600, unit = TimeUnit.SECONDS)
class StandaloneClusterFitTest {

    @TempDir
    Path dir;

    @Test
    void aPipelineFitsAcrossTwoExecutorsAndItsSavedModelScoresTheTestRows() throws Exception {
        Path data = FashionMnistFiles.installed();
        Convert.idx(
                data.resolve("train-images-idx3-ubyte.gz"),
                data.resolve("train-labels-idx1-ubyte.gz"),
                dir.resolve("train").toString(),
                10_000,
                30_000);
        Convert.idx(
                data.resolve("t10k-images-idx3-ubyte.gz"),
                data.resolve("t10k-labels-idx1-ubyte.gz"),
                dir.resolve("test").toString(),
                10_000,
                10_000);
        try (StandaloneCluster cluster = StandaloneCluster.start(dir.resolve("cluster"), 2)) {
            SparkSession spark = SparkSession.builder()
                    .config(cluster.conf("cohort-spark-ml-standalone-test"))
                    .getOrCreate();
            try {
                Pipeline pipeline = new Pipeline().setStages(new PipelineStage[] {
                    new VectorAssembler().setInputCols(new String[] {"pixels"}).setOutputCol("features"),
                    new CohortEstimator()
                            .setNumWorkers(2)
                            .setEpochs(1)
                            .setBatchSize(32)
                            .setEngine("tcp")
                            .setLrSchedule("linear")
                });
                PipelineModel fitted = pipeline.fit(pixels(spark, "train"));
                String saved = dir.resolve("model").toString();
                fitted.write().overwrite().save(saved);

                PipelineModel loaded = PipelineModel.load(saved);
                double accuracy = new MulticlassClassificationEvaluator()
                        .setMetricName("accuracy")
                        .evaluate(loaded.transform(pixels(spark, "test"))
                                .selectExpr("cast(label as double) label", "prediction"));
                System.out.printf("standalone cluster, 1 epoch on 2 executors: test accuracy %.4f%n", accuracy);
                assertThat(accuracy).isGreaterThanOrEqualTo(0.85);
                assertThat(cluster.executors())
                        .as("one executor JVM per worker")
                        .isEqualTo(2);
            } finally {
                spark.stop();
            }
        }
    }

    /** The split's pixels, standardized, as a vector column {@code pixels}, and its label. */
    private Dataset<Row> pixels(SparkSession spark, String split) {
        return spark.read()
                .parquet(dir.resolve(split).toString())
                .withColumn("pixels", functions.array_to_vector(expr(FashionMnistDemo.STANDARDIZED_FEATURES)))
                .select(col("pixels"), col("label"));
    }
}
