package dev.cohort.spark.ml;

import java.io.Serializable;
import org.apache.spark.ml.param.BooleanParam;
import org.apache.spark.ml.param.DoubleParam;
import org.apache.spark.ml.param.IntParam;
import org.apache.spark.ml.param.LongParam;
import org.apache.spark.ml.param.Param;
import org.apache.spark.ml.param.Params;
import org.apache.spark.ml.param.StringArrayParam;

/**
 * The parameters {@link CohortEstimator} and {@link CohortModel} share, as Spark ML's own
 * estimators and models do: the model keeps the values it was fitted with.
 */
public interface CohortParams extends Params {

    /** The parameter objects of one estimator or model (Spark finds them through the accessors below). */
    final class Declared implements Serializable {
        private static final long serialVersionUID = 1L;

        final Param<String> featuresCol;
        final StringArrayParam featureCols;
        final Param<String> labelCol;
        final Param<String> predictionCol;
        final Param<String> probabilityCol;
        final IntParam numWorkers;
        final IntParam epochs;
        final IntParam batchSize;
        final DoubleParam learningRate;
        final Param<String> optimizer;
        final Param<String> modelFactory;
        final Param<String> engine;
        final Param<String> checkpointDir;
        final LongParam seed;
        final BooleanParam shardInMemory;

        Declared(CohortParams owner) {
            String uid = owner.uid();
            featuresCol = new Param<>(uid, "featuresCol", "the features: a vector column, or an array of numbers");
            featureCols = new StringArrayParam(
                    owner, "featureCols", "numeric columns to use as the features instead of featuresCol");
            labelCol = new Param<>(uid, "labelCol", "the label: class numbers 0, 1, ...");
            predictionCol = new Param<>(uid, "predictionCol", "the predicted class, added by transform");
            probabilityCol = new Param<>(
                    uid, "probabilityCol", "the class probabilities as a vector, added by transform; empty: none");
            numWorkers = new IntParam(owner, "numWorkers", "ranks: one Spark task each, all running at once");
            epochs = new IntParam(owner, "epochs", "passes over each rank's share of the rows");
            batchSize = new IntParam(owner, "batchSize", "rows per step on each rank");
            learningRate = new DoubleParam(owner, "learningRate", "the optimizer's learning rate");
            optimizer = new Param<>(uid, "optimizer", "adam (the default) or sgd (momentum 0.9)");
            modelFactory = new Param<>(
                    uid, "modelFactory", "the TorchModelFactory class that makes the model (on the executors)");
            engine = new Param<>(uid, "engine", "the ranks' engine: auto, tcp, gloo, shm, ...");
            checkpointDir = new Param<>(
                    uid,
                    "checkpointDir",
                    "a directory every executor's host reaches where rank 0 checkpoints each epoch and a retried "
                            + "stage resumes; empty: none");
            seed = new LongParam(owner, "seed", "seeds the model's initial weights and the shuffles");
            shardInMemory = new BooleanParam(
                    owner, "shardInMemory", "keep each rank's rows in memory (/dev/shm) instead of on local disk");
            owner.setDefault(featuresCol, "features");
            owner.setDefault(featureCols, new String[0]);
            owner.setDefault(labelCol, "label");
            owner.setDefault(predictionCol, "prediction");
            owner.setDefault(probabilityCol, "probability");
            owner.setDefault(numWorkers, 2);
            owner.setDefault(epochs, 1);
            owner.setDefault(batchSize, 64);
            owner.setDefault(learningRate, 0.001);
            owner.setDefault(optimizer, "adam");
            owner.setDefault(modelFactory, MlpFactory.class.getName());
            owner.setDefault(engine, "auto");
            owner.setDefault(checkpointDir, "");
            owner.setDefault(seed, 42L);
            owner.setDefault(shardInMemory, false);
        }
    }

    /** This estimator's or model's parameter objects. */
    Declared declared();

    default Param<String> featuresCol() {
        return declared().featuresCol;
    }

    default StringArrayParam featureCols() {
        return declared().featureCols;
    }

    default Param<String> labelCol() {
        return declared().labelCol;
    }

    default Param<String> predictionCol() {
        return declared().predictionCol;
    }

    default Param<String> probabilityCol() {
        return declared().probabilityCol;
    }

    default IntParam numWorkers() {
        return declared().numWorkers;
    }

    default IntParam epochs() {
        return declared().epochs;
    }

    default IntParam batchSize() {
        return declared().batchSize;
    }

    default DoubleParam learningRate() {
        return declared().learningRate;
    }

    default Param<String> optimizer() {
        return declared().optimizer;
    }

    default Param<String> modelFactory() {
        return declared().modelFactory;
    }

    default Param<String> engine() {
        return declared().engine;
    }

    default Param<String> checkpointDir() {
        return declared().checkpointDir;
    }

    default LongParam seed() {
        return declared().seed;
    }

    default BooleanParam shardInMemory() {
        return declared().shardInMemory;
    }

    default String getFeaturesCol() {
        return getOrDefault(featuresCol());
    }

    default String[] getFeatureCols() {
        return getOrDefault(featureCols());
    }

    default String getLabelCol() {
        return getOrDefault(labelCol());
    }

    default String getPredictionCol() {
        return getOrDefault(predictionCol());
    }

    default String getProbabilityCol() {
        return getOrDefault(probabilityCol());
    }

    default int getNumWorkers() {
        return (Integer) getOrDefault(numWorkers());
    }

    default int getEpochs() {
        return (Integer) getOrDefault(epochs());
    }

    default int getBatchSize() {
        return (Integer) getOrDefault(batchSize());
    }

    default double getLearningRate() {
        return (Double) getOrDefault(learningRate());
    }

    default String getOptimizer() {
        return getOrDefault(optimizer());
    }

    default String getModelFactory() {
        return getOrDefault(modelFactory());
    }

    default String getEngine() {
        return getOrDefault(engine());
    }

    default String getCheckpointDir() {
        return getOrDefault(checkpointDir());
    }

    default long getSeed() {
        return (Long) getOrDefault(seed());
    }

    default boolean getShardInMemory() {
        return (Boolean) getOrDefault(shardInMemory());
    }
}
