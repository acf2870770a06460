package dev.cohort.spark.ml;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.cohort.libtorch.LibTorch;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.spark.ml.linalg.SQLDataTypes;
import org.apache.spark.ml.linalg.Vectors;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.assertj.core.api.AbstractThrowableAssert;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What {@code fit} refuses, each with an error that names the column, row count or setting and
 * says what to do; none of them starts a task.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class BadInputTest extends OnLocalSpark {

    /**
     * No job of the refused fit is left running. The status tracker learns that a job ended from
     * Spark's listener bus, after the job's caller has its result, so a validation job that just
     * ended may still be listed for a moment: wait up to 10 s for the list to empty.
     */
    @AfterEach
    void nothingLeftRunning() throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        int[] active = spark.sparkContext().statusTracker().getActiveJobIds();
        while (active.length > 0 && System.nanoTime() < deadline) {
            Thread.sleep(20);
            active = spark.sparkContext().statusTracker().getActiveJobIds();
        }
        assertThat(active).isEmpty();
    }

    private static final StructType VECTORS =
            new StructType().add("features", SQLDataTypes.VectorType()).add("label", DataTypes.DoubleType);

    private static Dataset<Row> rows(StructType schema, List<Row> rows) {
        return spark.createDataFrame(rows, schema);
    }

    private static List<Row> vectors(int count, int width) {
        List<Row> rows = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            rows.add(RowFactory.create(Vectors.dense(new double[width]), (double) (i % 2)));
        }
        return rows;
    }

    private static CohortEstimator estimator() {
        return new CohortEstimator().setBatchSize(4).setSlotWait(Duration.ofSeconds(1));
    }

    @Test
    void aMissingColumnIsNamedWithTheColumnsThereAre() {
        assertThatThrownBy(() -> estimator().setFeaturesCol("pixels").fit(rows(VECTORS, vectors(20, 3))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("no column pixels (featuresCol)")
                .hasMessageContaining("features, label");
    }

    @Test
    void aLabelThatIsNotNumericIsRefused() {
        StructType schema =
                new StructType().add("features", SQLDataTypes.VectorType()).add("label", DataTypes.StringType);
        List<Row> data = List.of(RowFactory.create(Vectors.dense(1, 2), "cat"));
        fitRefuses(rows(schema, data))
                .hasMessageContaining("label column label is string, not numeric")
                .hasMessageContaining("StringIndexer");
    }

    @Test
    void featuresOfAnotherTypeAreRefused() {
        StructType schema =
                new StructType().add("features", DataTypes.StringType).add("label", DataTypes.IntegerType);
        fitRefuses(rows(schema, List.of(RowFactory.create("a", 1))))
                .hasMessageContaining("features column features is string")
                .hasMessageContaining("featureCols");
    }

    /** 20 rows of 3 features, row {@code at} replaced by {@code row}. */
    private static Dataset<Row> vectorsWith(int at, Row row) {
        List<Row> data = vectors(20, 3);
        data.set(at, row);
        return rows(VECTORS, data);
    }

    private static AbstractThrowableAssert<?, ? extends Throwable> fitRefuses(Dataset<Row> data) {
        return assertThatThrownBy(() -> estimator().fit(data)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void nullsAreCountedAndNamed() {
        fitRefuses(vectorsWith(7, RowFactory.create(null, 1.0)))
                .hasMessageContaining("1 of 20 rows have no features (null in features)");
        fitRefuses(vectorsWith(3, RowFactory.create(Vectors.dense(1, 2, 3), null)))
                .hasMessageContaining("1 of 20 rows have no label (null in label)");
    }

    @Test
    void vectorsOfDifferentLengthsAreRefused() {
        fitRefuses(vectorsWith(5, RowFactory.create(Vectors.dense(1, 2), 0.0)))
                .hasMessageContaining("differ in length, from 2 to 3");
    }

    @Test
    void labelsMustBeClassNumbers() {
        fitRefuses(vectorsWith(2, RowFactory.create(Vectors.dense(1, 2, 3), 0.5)))
                .hasMessageContaining("class numbers 0, 1, ..., found fractional values");
        fitRefuses(vectorsWith(2, RowFactory.create(Vectors.dense(1, 2, 3), -1.0)))
                .hasMessageContaining("found -1.0");
    }

    @Test
    void anEmptyDataFrameOrTooFewRowsForEveryWorkerAreRefused() {
        fitRefuses(rows(VECTORS, List.of())).hasMessageContaining("no rows");
        fitRefuses(rows(VECTORS, vectors(6, 3)))
                .hasMessageContaining("6 rows, fewer than a batch of 4 for each of the 2 workers");
    }

    @Test
    void aModelFactoryThatCannotBeMadeIsNamed() {
        assertThatThrownBy(
                        () -> estimator().setModelFactory("com.example.Missing").fit(rows(VECTORS, vectors(20, 3))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("the model factory com.example.Missing is not on the class path")
                .hasMessageContaining("--jars");
        assertThatThrownBy(() ->
                        estimator().setModelFactory(String.class.getName()).fit(rows(VECTORS, vectors(20, 3))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("does not implement dev.cohort.spark.ml.TorchModelFactory");
        assertThatThrownBy(() -> estimator()
                        .setFramework("djl")
                        .setModelFactory(MlpFactory.class)
                        .fit(rows(VECTORS, vectors(20, 3))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("does not implement dev.cohort.spark.ml.DjlModelFactory")
                .hasMessageContaining("it is a TorchModelFactory, so set the framework to torch");
    }

    @Test
    void djlIsRefusedOnAnEngineThatLoadsJavaCppsLibtorchAndInAJvmThatHasLoadedIt() {
        assertThatThrownBy(
                        () -> estimator().setFramework("djl").setEngine("gloo").fit(rows(VECTORS, vectors(20, 3))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("framework djl cannot run on the gloo engine")
                .hasMessageContaining("use engine auto, tcp, shm or hier");
        LibTorch.load();
        assertThatThrownBy(() -> DjlRuntime.load(1))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("this JVM has loaded JavaCPP's libtorch")
                .hasMessageContaining("Use one framework per Spark application");
    }

    @Test
    void moreWorkersThanTaskSlotsIsRefusedBeforeTheStageWaitsForSlots() {
        assertThatThrownBy(() -> estimator().setNumWorkers(3).fit(rows(VECTORS, vectors(40, 3))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("offers 2 task slot(s)")
                .hasMessageContaining("fewer than the 3 workers")
                .hasMessageContaining("numWorkers to at most 2");
    }

    @Test
    void settingsOutOfRangeAreRefusedWhenSet() {
        assertThatThrownBy(() -> estimator().setNumWorkers(0)).hasMessageContaining("numWorkers must be >= 1");
        assertThatThrownBy(() -> estimator().setOptimizer("rmsprop")).hasMessageContaining("sgd or adam");
        assertThatThrownBy(() -> estimator().setFramework("tensorflow")).hasMessageContaining("torch or djl");
        assertThatThrownBy(() -> estimator().setEngine("nccl")).hasMessageContaining("no engine nccl");
        assertThatThrownBy(() -> estimator().setLearningRate(0)).hasMessageContaining("learningRate must be > 0");
    }
}
