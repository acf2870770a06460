package dev.cohort.spark.ml;

import static org.apache.spark.sql.functions.col;

import dev.cohort.api.Backends;
import dev.cohort.spark.CohortOnSpark;
import dev.cohort.spark.RankResult;
import dev.cohort.spark.SparkJob;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.apache.spark.SparkContext;
import org.apache.spark.ml.Estimator;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.StructType;

/**
 * A Spark ML {@code Estimator} whose {@code fit(DataFrame)} trains a classifier on {@code
 * numWorkers} ranks across the executors, data-parallel, and returns a {@link CohortModel}: a
 * libtorch model through JavaCPP (framework {@code torch}, the default) or a DJL block on DJL's
 * PyTorch engine ({@code djl}).
 *
 * <p>{@code fit} checks the DataFrame in one pass (columns, types, nulls, vector lengths, labels),
 * checks that the cluster offers a task slot per worker, repartitions the rows to one partition
 * per worker and runs one barrier stage ({@link CohortOnSpark}): each task starts its rank as a JVM
 * of its own and streams its partition's rows to it, which the rank spills to a local Parquet file
 * and streams back each epoch, reshuffled, through Cohort's data loader; the ranks average their
 * gradients each step on the chosen engine. No copy of the data goes through a shared store.
 *
 * <pre>{@code
 * CohortEstimator cohort = new CohortEstimator().setNumWorkers(2).setEpochs(5).setLabelCol("label");
 * Pipeline pipeline = new Pipeline().setStages(new PipelineStage[] {assembler, cohort});
 * PipelineModel model = pipeline.fit(train);
 * Dataset<Row> predicted = model.transform(test); // adds prediction and probability
 * }</pre>
 */
public final class CohortEstimator extends Estimator<CohortModel> implements CohortParams<CohortEstimator> {

    private static final long serialVersionUID = 1L;

    /** Engines that load JavaCPP's libtorch, which cannot share a process with DJL's. */
    private static final Set<String> LOADS_JAVACPP_LIBTORCH = Set.of("gloo");

    private final String uid;
    private final Declared declared;
    private final Map<String, String> rankEnvironment = new LinkedHashMap<>();
    private Duration timeout = SparkJob.DEFAULT_TIMEOUT;
    private Duration slotWait = Duration.ofSeconds(30);

    public CohortEstimator() {
        this(Identifiable.randomUID("cohort"));
    }

    public CohortEstimator(String uid) {
        this.uid = uid;
        this.declared = new Declared(this);
    }

    @Override
    public String uid() {
        return uid;
    }

    @Override
    public Declared declared() {
        return declared;
    }

    /** How long the ranks may train before their tasks kill them and fail the stage (default 24 h). */
    public CohortEstimator setTimeout(Duration limit) {
        this.timeout = Objects.requireNonNull(limit, "limit");
        return this;
    }

    /** A variable for every rank's environment (e.g. {@code GLOO_SOCKET_IFNAME}); not a Spark ML parameter. */
    public CohortEstimator setRankEnvironment(String name, String value) {
        rankEnvironment.put(name, value);
        return this;
    }

    /** How long {@code fit} waits for the cluster to offer a task slot per worker before it refuses (default 30 s). */
    public CohortEstimator setSlotWait(Duration wait) {
        this.slotWait = Objects.requireNonNull(wait, "wait");
        return this;
    }

    @Override
    public StructType transformSchema(StructType schema) {
        FeatureColumns.vector(schema, getFeaturesCol(), getFeatureCols());
        FeatureColumns.checkLabel(schema, getLabelCol());
        return CohortModel.outputSchema(schema, getPredictionCol(), getProbabilityCol());
    }

    /**
     * Trains on {@code dataset} and returns the fitted model, with every epoch's loss and accuracy
     * ({@link CohortModel#history()}). When the training stage fails for good, Spark's {@code
     * SparkException} (unchecked from Java) comes out of this call: its message names the rank, its
     * exit code and its last lines.
     *
     * @throws IllegalArgumentException for a DataFrame or setting {@code fit} cannot train on, named,
     *     before any task starts
     */
    @Override
    public CohortModel fit(Dataset<?> dataset) {
        transformSchema(dataset.schema());
        String label = getLabelCol();
        Dataset<Row> prepared = dataset.select(
                FeatureColumns.vector(dataset.schema(), getFeaturesCol(), getFeatureCols())
                        .as(FeatureColumns.VECTOR),
                col(label).cast("double").as(label));
        FeatureColumns.Shape shape = FeatureColumns.inspect(prepared, getFeaturesCol(), label);
        int workers = getNumWorkers();
        if (shape.rows() < (long) workers * getBatchSize()) {
            throw new IllegalArgumentException("the DataFrame has " + shape.rows() + " rows, fewer than a batch of "
                    + getBatchSize() + " for each of the " + workers + " workers: use fewer workers or a smaller "
                    + "batch size");
        }
        Framework framework = Framework.of(getFramework());
        if (framework == Framework.DJL && LOADS_JAVACPP_LIBTORCH.contains(getEngine())) {
            throw new IllegalArgumentException("framework djl cannot run on the " + getEngine() + " engine: it loads "
                    + "JavaCPP's libtorch, DJL's PyTorch engine loads its own, and two libtorch builds cannot share a "
                    + "process; use engine auto, tcp, shm or hier");
        }
        String factory = getModelFactory().isEmpty() ? framework.defaultFactory : getModelFactory();
        ModelSpec spec = new ModelSpec(framework, factory, shape.width(), shape.classes());
        spec.check(); // a factory the ranks could not use fails here, before any task starts
        SparkContext sc = dataset.sparkSession().sparkContext();
        TaskSlots.await(sc, workers, slotWait);
        TrainSettings settings = new TrainSettings(
                shape.width(),
                shape.classes(),
                getEpochs(),
                getBatchSize(),
                getLearningRate(),
                getOptimizer(),
                getLrSchedule(),
                framework.paramValue(),
                factory,
                getSeed(),
                getCheckpointDir().isEmpty()
                        ? ""
                        : Path.of(getCheckpointDir())
                                .resolve(uid + "-" + sc.applicationId())
                                .toString(),
                getShardInMemory(),
                sc.getConf().getInt("spark.task.cpus", 1));
        SparkJob job = SparkJob.of(workers, SparkRank.class.getName(), settings.toJson())
                .withTimeout(timeout);
        if (!getEngine().equals(Backends.AUTO)) {
            job = job.withEnvironment(Backends.ENV_BACKEND, getEngine());
        }
        for (Map.Entry<String, String> e : rankEnvironment.entrySet()) {
            job = job.withEnvironment(e.getKey(), e.getValue());
        }
        List<RankResult> results =
                CohortOnSpark.run(prepared.javaRDD().repartition(workers), job, new RowFeed(shape.width()));
        FitResult fitted = FitResult.fromBytes(results.get(0).result(), spec);
        CohortModel model = new CohortModel(uid, fitted);
        return copyValues(model, extractParamMap()).setParent(this);
    }

    @Override
    public CohortEstimator copy(ParamMap extra) {
        CohortEstimator copy = defaultCopy(extra);
        copy.rankEnvironment.putAll(rankEnvironment);
        copy.timeout = timeout;
        copy.slotWait = slotWait;
        return copy;
    }
}
