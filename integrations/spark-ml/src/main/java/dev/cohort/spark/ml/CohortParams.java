package dev.cohort.spark.ml;

import dev.cohort.api.Backends;
import java.io.Serializable;
import java.util.List;
import java.util.Objects;
import org.apache.spark.ml.param.BooleanParam;
import org.apache.spark.ml.param.DoubleParam;
import org.apache.spark.ml.param.IntParam;
import org.apache.spark.ml.param.LongParam;
import org.apache.spark.ml.param.Param;
import org.apache.spark.ml.param.Params;
import org.apache.spark.ml.param.StringArrayParam;

/**
 * The parameters {@link CohortEstimator} and {@link CohortModel} share, as Spark ML's own
 * estimators and models do: the model keeps the values it was fitted with. Below, in this order:
 * each parameter's {@code Param} (for Spark, e.g. a {@code ParamGridBuilder}), its value
 * ({@code get...}), and its setter, which returns the estimator or model, {@code S}, for chaining.
 *
 * @param <S> the estimator or model itself
 */
public interface CohortParams<S extends CohortParams<S>> extends Params {

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
        final Param<String> lrSchedule;
        final Param<String> framework;
        final Param<String> modelFactory;
        final Param<String> engine;
        final Param<String> checkpointDir;
        final LongParam seed;
        final BooleanParam shardInMemory;

        Declared(CohortParams<?> owner) {
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
            lrSchedule = new Param<>(
                    uid,
                    "lrSchedule",
                    "constant (the default): learningRate throughout; linear: from learningRate down to 0 at the "
                            + "last step");
            framework = new Param<>(
                    uid, "framework", "torch (the default: JavaCPP's libtorch) or djl (DJL's PyTorch engine)");
            modelFactory = new Param<>(
                    uid,
                    "modelFactory",
                    "the class that makes the model on the executors: a TorchModelFactory (framework torch) or a "
                            + "DjlModelFactory (djl); empty (the default): the framework's MLP");
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
            owner.setDefault(lrSchedule, "constant");
            owner.setDefault(framework, "torch");
            owner.setDefault(modelFactory, "");
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

    default Param<String> lrSchedule() {
        return declared().lrSchedule;
    }

    default Param<String> framework() {
        return declared().framework;
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

    default String getLrSchedule() {
        return getOrDefault(lrSchedule());
    }

    default String getFramework() {
        return $(framework());
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

    default S setFeaturesCol(String name) {
        return with(featuresCol(), name);
    }

    default S setFeatureCols(String... names) {
        return with(featureCols(), names);
    }

    default S setLabelCol(String name) {
        return with(labelCol(), name);
    }

    default S setPredictionCol(String name) {
        return with(predictionCol(), name);
    }

    /** Where {@code transform} puts the probabilities; empty: none. */
    default S setProbabilityCol(String name) {
        return with(probabilityCol(), name);
    }

    default S setNumWorkers(int workers) {
        return with(numWorkers(), positive(workers, "numWorkers"));
    }

    default S setEpochs(int epochs) {
        return with(epochs(), positive(epochs, "epochs"));
    }

    default S setBatchSize(int rows) {
        return with(batchSize(), positive(rows, "batchSize"));
    }

    default S setLearningRate(double rate) {
        if (!(rate > 0)) {
            throw new IllegalArgumentException("learningRate must be > 0, got " + rate);
        }
        return with(learningRate(), rate);
    }

    /** {@code sgd} (momentum 0.9) or {@code adam}. */
    default S setOptimizer(String name) {
        if (!List.of("sgd", "adam").contains(name)) {
            throw new IllegalArgumentException("optimizer must be sgd or adam, got " + name);
        }
        return with(optimizer(), name);
    }

    /** {@code constant} (the default) or {@code linear}: from the learning rate down to 0 at the last step. */
    default S setLrSchedule(String schedule) {
        if (!List.of("constant", "linear").contains(schedule)) {
            throw new IllegalArgumentException("lrSchedule must be constant or linear, got " + schedule);
        }
        return with(lrSchedule(), schedule);
    }

    /** {@code torch} (the default: JavaCPP's libtorch) or {@code djl} (DJL's PyTorch engine). */
    default S setFramework(String name) {
        return with(framework(), Framework.of(name).paramValue());
    }

    /**
     * The model factory class: a {@link TorchModelFactory} for framework torch, a {@link
     * DjlModelFactory} for djl; empty (the default): the framework's MLP ({@link MlpFactory},
     * {@link DjlMlpFactory}).
     */
    default S setModelFactory(String className) {
        return with(modelFactory(), Objects.requireNonNull(className, "className"));
    }

    /** The model factory class, as {@link #setModelFactory(String)}. */
    default S setModelFactory(Class<?> factory) {
        return setModelFactory(factory.getName());
    }

    /** The ranks' engine by name ({@code auto}, the default, picks the fastest the layout allows). */
    default S setEngine(String name) {
        if (!name.equals(Backends.AUTO) && !Backends.names().contains(name)) {
            throw new IllegalArgumentException("no engine " + name + " on the class path; there are: auto, "
                    + String.join(", ", Backends.names()));
        }
        return with(engine(), name);
    }

    default S setCheckpointDir(String dir) {
        return with(checkpointDir(), Objects.requireNonNull(dir, "dir"));
    }

    default S setSeed(long seed) {
        return with(seed(), seed);
    }

    default S setShardInMemory(boolean inMemory) {
        return with(shardInMemory(), inMemory);
    }

    /** Sets {@code param} and returns this estimator or model. */
    @SuppressWarnings("unchecked")
    private <T> S with(Param<T> param, T value) {
        set(param, value);
        return (S) this;
    }

    private static int positive(int value, String name) {
        if (value < 1) {
            throw new IllegalArgumentException(name + " must be >= 1, got " + value);
        }
        return value;
    }
}
