package dev.cohort.spark.ml;

import static org.apache.spark.ml.functions.vector_to_array;
import static org.apache.spark.sql.functions.col;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.apache.spark.ml.Pipeline;
import org.apache.spark.ml.PipelineModel;
import org.apache.spark.ml.PipelineStage;
import org.apache.spark.ml.evaluation.MulticlassClassificationEvaluator;
import org.apache.spark.ml.feature.VectorAssembler;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link CohortEstimator} as a stage of a Spark ML {@code Pipeline} after {@code VectorAssembler},
 * on numeric columns: fitted on two workers, saved as a {@code PipelineModel}, loaded back, and
 * predicting the same.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class PipelineTest extends OnLocalSpark {

    @TempDir
    Path dir;

    /** Three classes of points around three centres in 4 dimensions, columns x0..x3 and an integer label. */
    static Dataset<Row> blobs(SparkSession spark, int rows, long seed) {
        double[][] centres = {{2, 0, 0, 1}, {0, 2, 0, -1}, {0, 0, 2, 0}};
        Random random = new Random(seed);
        List<Row> data = new ArrayList<>();
        for (int i = 0; i < rows; i++) {
            int label = i % 3;
            Object[] values = new Object[5];
            for (int d = 0; d < 4; d++) {
                values[d] = centres[label][d] + 0.4 * random.nextGaussian();
            }
            values[4] = label;
            data.add(RowFactory.create(values));
        }
        StructType schema = new StructType()
                .add("x0", DataTypes.DoubleType)
                .add("x1", DataTypes.DoubleType)
                .add("x2", DataTypes.DoubleType)
                .add("x3", DataTypes.DoubleType)
                .add("label", DataTypes.IntegerType);
        return spark.createDataFrame(data, schema);
    }

    /** Also: the fitted stage predicts the same from the features as a vector or as an array. */
    @Test
    void aPipelineWithVectorAssemblerFitsSavesLoadsAndPredictsTheSame() throws Exception {
        Dataset<Row> train = blobs(spark, 3000, 1);
        Dataset<Row> test = blobs(spark, 600, 2);
        VectorAssembler assembler = assembler();
        CohortEstimator cohort = new CohortEstimator()
                .setNumWorkers(2)
                .setEpochs(3)
                .setBatchSize(32)
                .setEngine("tcp");
        PipelineModel fitted = new Pipeline()
                .setStages(new PipelineStage[] {assembler, cohort})
                .fit(train);

        Dataset<Row> predicted = fitted.transform(test);
        double accuracy = accuracy(predicted);
        assertThat(accuracy).isGreaterThan(0.95);
        CohortModel model = (CohortModel) fitted.stages()[1];
        assertThat(model.history()).extracting(EpochStats::epoch).containsExactly(1, 2, 3);
        assertThat(model.numClasses()).isEqualTo(3);
        vectorsAndArraysPredictTheSame(model, assembler.transform(test));

        String path = dir.resolve("pipeline").toString();
        fitted.write().save(path);
        PipelineModel loaded = PipelineModel.load(path);
        CohortModel back = (CohortModel) loaded.stages()[1];
        assertThat(back.uid()).isEqualTo(model.uid());
        assertThat(back.history()).isEqualTo(model.history());
        assertThat(back.getEpochs()).isEqualTo(3);
        List<Row> before = predicted.select("prediction").collectAsList();
        List<Row> after = loaded.transform(test).select("prediction").collectAsList();
        assertThat(after).isEqualTo(before);
    }

    @Test
    void numericColumnsServeAsFeaturesWithoutAnAssemblerAndTheProbabilitiesCanBeLeftOut() {
        Dataset<Row> train = blobs(spark, 1200, 3);
        CohortModel model = new CohortEstimator()
                .setFeatureCols("x0", "x1", "x2", "x3")
                .setNumWorkers(2)
                .setEpochs(2)
                .setBatchSize(16)
                .setEngine("tcp")
                .fit(train);
        Dataset<Row> predicted = model.setProbabilityCol("").transform(blobs(spark, 300, 4));
        assertThat(predicted.columns()).containsExactly("x0", "x1", "x2", "x3", "label", "prediction");
        assertThat(accuracy(predicted)).isGreaterThan(0.9);
    }

    /** The fitted stage predicts the same from the features as a vector column or as an array column. */
    private static void vectorsAndArraysPredictTheSame(CohortModel model, Dataset<Row> vectors) {
        Dataset<Row> arrays = vectors.withColumn("features", vector_to_array(col("features"), "float64"));
        Dataset<Row> fromArrays = model.transform(arrays);
        assertThat(fromArrays.columns())
                .containsExactly("x0", "x1", "x2", "x3", "label", "features", "prediction", "probability");
        assertThat(fromArrays.select("prediction", "probability").collectAsList())
                .isEqualTo(model.transform(vectors)
                        .select("prediction", "probability")
                        .collectAsList());
    }

    /** The four numeric columns as the vector column {@code features}. */
    private static VectorAssembler assembler() {
        return new VectorAssembler()
                .setInputCols(new String[] {"x0", "x1", "x2", "x3"})
                .setOutputCol("features");
    }

    private static double accuracy(Dataset<Row> predicted) {
        return new MulticlassClassificationEvaluator()
                .setMetricName("accuracy")
                .evaluate(predicted.selectExpr("cast(label as double) label", "prediction"));
    }
}
