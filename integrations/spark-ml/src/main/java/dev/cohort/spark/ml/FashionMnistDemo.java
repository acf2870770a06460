package dev.cohort.spark.ml;

import static org.apache.spark.ml.functions.array_to_vector;
import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.expr;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.cohort.data.Convert;
import dev.cohort.spark.SparkOptions;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import org.apache.spark.ml.evaluation.MulticlassClassificationEvaluator;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code ./cohort demo --spark MASTER}: Fashion-MNIST as a Spark user holds it (Parquet read into a
 * DataFrame), fitted by {@link CohortEstimator} on {@code --workers} tasks, the test DataFrame
 * transformed by the {@link CohortModel} and scored by Spark's own evaluator. The summary (test
 * accuracy, each epoch's loss and samples/s, the time the rows took to reach the ranks) is printed
 * and written as JSON.
 */
@Command(
        name = "cohort demo --spark",
        mixinStandardHelpOptions = true,
        description = "Fits CohortEstimator on Fashion-MNIST as a DataFrame and scores the model with Spark.")
public final class FashionMnistDemo implements Callable<Integer> {

    /**
     * The {@code features} array standardized in Spark SQL with the training pixels' mean and
     * standard deviation (pixels in [0, 1]).
     */
    static final String STANDARDIZED_FEATURES = "transform(features, x -> (x - 0.2860) / 0.3530)";

    @Mixin
    SparkOptions sparkOptions = new SparkOptions();

    @Option(names = "--data-dir", paramLabel = "DIR", required = true, description = "The four IDX files.")
    Path dataDir;

    @Option(names = "--json", paramLabel = "FILE", required = true, description = "Where the summary goes.")
    Path json;

    @Option(names = "--epochs", defaultValue = "5", description = "Epochs (default ${DEFAULT-VALUE}).")
    int epochs;

    @Option(names = "--batch-size", defaultValue = "64", description = "Rows a rank's step takes (default 64).")
    int batchSize;

    @Option(names = "--backend", defaultValue = "auto", description = "The ranks' engine (default ${DEFAULT-VALUE}).")
    String backend;

    @Option(
            names = "--framework",
            defaultValue = "torch",
            description = "torch (default: JavaCPP's libtorch) or djl (DJL's PyTorch engine).")
    String framework;

    @Option(names = "--optimizer", defaultValue = "adam", description = "adam (default) or sgd (momentum 0.9).")
    String optimizer;

    @Option(
            names = "--measure-inference",
            paramLabel = "ROUNDS",
            defaultValue = "0",
            description = "Also time transform on the training rows against a libtorch loop (ROUNDS passes each).")
    int inferenceRounds;

    public static void main(String[] args) {
        if (System.getProperty("log4j2.configurationFile") == null) {
            System.setProperty("log4j2.configurationFile", "cohort-spark-log4j2.properties");
        }
        System.exit(new CommandLine(new FashionMnistDemo())
                .setExecutionExceptionHandler((e, line, parsed) -> {
                    System.err.println("cohort demo --spark: " + e.getMessage());
                    return 1;
                })
                .execute(args));
    }

    /** One run's result: the fitted model, its test accuracy by Spark's evaluator, the fit's wall time. */
    record Outcome(CohortModel model, double testAccuracy, double fitSeconds, InferenceSpeed.Figures inference) {}

    @Override
    public Integer call() throws IOException {
        Path parquet = Files.createTempDirectory("cohort-demo-spark");
        SparkSession spark = SparkSession.builder()
                .config(sparkOptions.conf("cohort demo: Fashion-MNIST with CohortEstimator"))
                .config("spark.ui.enabled", "false")
                .getOrCreate();
        try {
            Outcome outcome = run(spark, parquet);
            for (EpochStats e : outcome.model().history()) {
                System.out.printf(
                        Locale.ROOT,
                        "epoch %d: loss %.4f, training accuracy %.4f, %.0f samples/s, %.1f s%n",
                        e.epoch(),
                        e.loss(),
                        e.accuracy(),
                        e.samplesPerSec(),
                        e.seconds());
            }
            System.out.printf(
                    Locale.ROOT,
                    "done: %d worker(s) on %s, %d epoch(s): test accuracy %.4f (Spark's evaluator), fit %.1f s, "
                            + "rows streamed to the ranks in %.1f s%n",
                    sparkOptions.workers(),
                    sparkOptions.describeMaster(),
                    epochs,
                    outcome.testAccuracy(),
                    outcome.fitSeconds(),
                    outcome.model().streamSeconds());
            if (outcome.inference() != null) {
                System.out.printf(
                        Locale.ROOT,
                        "inference over %d rows on %d task slots: transform %.0f rows/s; a libtorch loop on as many"
                                + " threads %.0f rows/s; the rows' trip through Spark alone %.0f rows/s, so at best"
                                + " %.0f rows/s%n",
                        outcome.inference().rows(),
                        outcome.inference().slots(),
                        outcome.inference().transformRowsPerSec(),
                        outcome.inference().loopRowsPerSec(),
                        outcome.inference().rowTripRowsPerSec(),
                        outcome.inference().boundRowsPerSec());
            }
            writeSummary(outcome);
            return 0;
        } finally {
            spark.stop();
            deleteTree(parquet);
        }
    }

    /**
     * Writes both splits as Parquet under {@code work}, fits on the training DataFrame and scores
     * the model on the test DataFrame.
     */
    Outcome run(SparkSession spark, Path work) {
        Dataset<Row> train = asDataFrame(spark, "train", work);
        Dataset<Row> test = asDataFrame(spark, "t10k", work);
        long start = System.nanoTime();
        CohortModel model = new CohortEstimator()
                .setNumWorkers(sparkOptions.workers())
                .setEpochs(epochs)
                .setBatchSize(batchSize)
                .setEngine(backend)
                .setFramework(framework)
                .setLrSchedule("linear")
                .setOptimizer(optimizer)
                .fit(train);
        double fitSeconds = (System.nanoTime() - start) / 1e9;
        double accuracy = new MulticlassClassificationEvaluator()
                .setMetricName("accuracy")
                .evaluate(model.transform(test).selectExpr("cast(label as double) label", "prediction"));
        InferenceSpeed.Figures inference =
                inferenceRounds > 0 ? InferenceSpeed.measure(model, train, "features", inferenceRounds) : null;
        return new Outcome(model, accuracy, fitSeconds, inference);
    }

    /** The IDX split {@code split} ("train", "t10k") as Parquet shards, read back as a DataFrame. */
    private Dataset<Row> asDataFrame(SparkSession spark, String split, Path parquet) {
        Path images = dataDir.resolve(split + "-images-idx3-ubyte.gz");
        Path labels = dataDir.resolve(split + "-labels-idx1-ubyte.gz");
        if (!Files.isRegularFile(images) || !Files.isRegularFile(labels)) {
            throw new IllegalArgumentException(
                    "--data-dir " + dataDir + " lacks " + images.getFileName() + " or " + labels.getFileName());
        }
        String out = parquet.resolve(split).toString();
        Convert.idx(images, labels, out, 10_000, 30_000);
        // Pixels in [0, 1], standardized in Spark with the training set's mean and deviation, as a
        // Spark ML vector (what VectorAssembler and Spark's own models take).
        return spark.read()
                .parquet(out)
                .select(array_to_vector(expr(STANDARDIZED_FEATURES)).as("features"), col("label"));
    }

    private void writeSummary(Outcome outcome) throws IOException {
        CohortModel model = outcome.model();
        ObjectMapper mapper = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
        ObjectNode root = mapper.createObjectNode();
        root.put("workers", sparkOptions.workers());
        root.put("epochs", epochs);
        root.put("test_accuracy", outcome.testAccuracy());
        root.put("model", "mlp");
        root.put("framework", framework);
        root.put("backend", backend);
        root.put("optimizer", optimizer);
        root.put("spark_master", sparkOptions.describeMaster());
        root.put("global_batch_size", batchSize * sparkOptions.workers());
        root.put("fit_seconds", outcome.fitSeconds());
        root.put("stream_seconds", model.streamSeconds());
        if (outcome.inference() != null) {
            root.put("inference_rows", outcome.inference().rows());
            root.put("transform_rows_per_s", outcome.inference().transformRowsPerSec());
            root.put("inference_slots", outcome.inference().slots());
            root.put("loop_rows_per_s", outcome.inference().loopRowsPerSec());
            root.put("row_trip_rows_per_s", outcome.inference().rowTripRowsPerSec());
            root.put("transform_bound_rows_per_s", outcome.inference().boundRowsPerSec());
        }
        ArrayNode details = root.putArray("epochs_detail");
        for (EpochStats e : model.history()) {
            details.addObject()
                    .put("epoch", e.epoch())
                    .put("train_loss", e.loss())
                    .put("train_accuracy", e.accuracy())
                    .put("samples_per_s", e.samplesPerSec())
                    .put("seconds", e.seconds())
                    .put("attempt", e.attempt());
        }
        Path file = json.toAbsolutePath();
        Files.createDirectories(file.getParent());
        Files.writeString(file, mapper.writeValueAsString(root) + "\n");
    }

    private static void deleteTree(Path dir) {
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
