package dev.cohort.examples;

import dev.cohort.api.BackendUnavailableException;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.JobEnvironment;
import dev.cohort.cli.BackendChoice;
import dev.cohort.cli.BackendOptions;
import dev.cohort.cli.Commands;
import dev.cohort.data.ColumnMapping;
import dev.cohort.data.DataException;
import dev.cohort.data.ParquetDataset;
import dev.cohort.metrics.MetricsFile;
import dev.cohort.runtime.elastic.ElasticJob;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Trains an MLP or a small CNN on Fashion-MNIST, on one worker or many:
 *
 * <pre>
 * ./cohort run --nproc-per-node 2 -- dev.cohort.examples.FashionMnistTrainer --distributed-backend gloo --model cnn
 * </pre>
 *
 * The backend's options come from one call ({@link BackendOptions#add}); the training itself is
 * {@link FashionMnistTraining}. Exit codes: 0 done, 1 failed (bad data, backend error), 2 bad options.
 */
@Command(
        name = "fashion-mnist",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        versionProvider = Commands.Version.class,
        resourceBundle = "dev.cohort.examples.Trainer",
        description = "Trains a classifier on Fashion-MNIST with data-parallel workers.",
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {
            "0:done",
            "1:training failed (missing or corrupt data, backend error), or its summary or chart could not be written",
            "2:bad options"
        })
public final class FashionMnistTrainer implements Callable<Integer> {

    /** The environment variable the launcher sets to this worker's share of the cores. */
    public static final String THREADS_ENV = "COHORT_COMPUTE_THREADS";

    /**
     * How long a worker told to stop (SIGTERM, Ctrl-C) during training waits before exiting for the
     * failure it may be about to report. When a rank dies, the launcher stops the others at once,
     * usually a moment before their pending collective fails naming the lost rank; this lets that
     * error reach the output. Well under the launcher's grace period (5 s) before SIGKILL.
     */
    static final long STOP_REPORT_MILLIS = 2000;

    @Option(
            names = "--data-dir",
            paramLabel = "DIR",
            defaultValue = FashionMnist.DEFAULT_DIR,
            description = "directory of the four IDX files, .gz or not (default: ${DEFAULT-VALUE}, Debian's "
                    + FashionMnist.DEBIAN_PACKAGE + ")")
    Path dataDir;

    @Option(names = "--data", paramLabel = "DIR|URI")
    String parquetData;

    @Option(names = "--model", paramLabel = "mlp|cnn", defaultValue = "mlp")
    String model;

    @Option(names = "--grad-compression", paramLabel = "none|bf16|fp16", defaultValue = "none")
    String gradCompression;

    @Option(names = "--zero", paramLabel = "0|1|2", defaultValue = "0")
    int zeroStage;

    @Option(names = "--precision", paramLabel = "fp32|bf16|fp16", defaultValue = "fp32")
    String precision;

    @Option(names = "--framework", paramLabel = "torch|djl", defaultValue = "torch")
    String framework;

    @Option(names = "--epochs", paramLabel = "N", defaultValue = "4", description = "(default: ${DEFAULT-VALUE})")
    int epochs;

    @Option(names = "--batch-size", paramLabel = "N", defaultValue = "64")
    int batchSize;

    @Option(names = "--lr", paramLabel = "X", description = "SGD learning rate (default: 0.05)")
    Double lr;

    @Option(names = "--lr-schedule", paramLabel = "linear|constant", defaultValue = "linear")
    String schedule;

    @Option(names = "--momentum", paramLabel = "X", defaultValue = "0.9", description = "(default: ${DEFAULT-VALUE})")
    double momentum;

    @Option(names = "--seed", paramLabel = "N", defaultValue = "42")
    long seed;

    @Option(
            names = "--threads",
            paramLabel = "N",
            description = "compute threads of this worker (default: $" + THREADS_ENV + ", else 1)")
    Integer threads;

    @Option(names = "--max-steps", paramLabel = "N", defaultValue = "0")
    long maxSteps;

    @Option(names = "--checkpoint-dir", paramLabel = "DIR")
    Path checkpointDir;

    @Option(names = "--checkpoint-every", paramLabel = "STEPS", defaultValue = "0")
    int checkpointEvery;

    @Option(names = "--resume", description = "continue from the latest checkpoint in --checkpoint-dir, if any")
    boolean resume;

    @Option(names = "--elastic-batch", paramLabel = "per-worker|global", defaultValue = "per-worker")
    String elasticBatch;

    @Option(names = "--json", paramLabel = "FILE")
    Path json;

    /** How long an elastic run's survivors wait for the launcher's next generation and its group to connect. */
    private static final java.time.Duration ELASTIC_PATIENCE = java.time.Duration.ofSeconds(60);

    private BackendChoice backendChoice;
    private final PrintStream out;
    private final PrintStream err;

    FashionMnistTrainer(PrintStream out, PrintStream err) {
        this.out = out;
        this.err = err;
    }

    public static void main(String[] args) {
        System.exit(run(args));
    }

    /** Parses {@code args} and trains; returns the exit code. */
    public static int run(String... args) {
        return new FashionMnistTrainer(System.out, System.err).execute(args);
    }

    int execute(String... args) {
        CommandLine cli = new CommandLine(this);
        backendChoice = BackendOptions.add(cli);
        cli.setParameterExceptionHandler((ex, a) -> {
            JobEnvironment.recordFailure(ex);
            err.println("fashion-mnist: " + ex.getMessage());
            err.println("see --help");
            return 2;
        });
        cli.setExecutionExceptionHandler((ex, c, parsed) -> {
            JobEnvironment.recordFailure(ex);
            err.println("fashion-mnist: failed: " + ex);
            ex.printStackTrace(err);
            return 1;
        });
        return cli.execute(args);
    }

    @Override
    public Integer call() {
        TrainingConfig config;
        DistributedBackend backend;
        boolean djl;
        try {
            config = config();
            djl = djl();
            if (djl && !config.precision().equals("fp32")) {
                throw new IllegalArgumentException("--precision " + config.precision() + " is for --framework torch "
                        + "(libtorch's autocast through JavaCPP); DJL trains in float32 here, with --grad-compression "
                        + "for 16-bit gradients on the wire");
            }
            if (djl) {
                // DJL's libtorch first: engines that would load JavaCPP's then say they cannot run here.
                DjlFashionMnistTraining.loadEngine(config.threads());
            }
            backend = backendChoice.backend();
            if (djl) {
                DjlFashionMnistTraining.checkBackend(backend.name());
            }
        } catch (BackendUnavailableException e) {
            err.println("fashion-mnist: " + e.getMessage());
            JobEnvironment.recordFailure(e);
            return 1;
        } catch (IllegalArgumentException e) {
            err.println("fashion-mnist: " + e.getMessage());
            JobEnvironment.recordFailure(e);
            return 2;
        }
        CountDownLatch ended = new CountDownLatch(1);
        Thread onStop = new Thread(() -> awaitEnd(ended), "fashion-mnist-stop");
        Runtime.getRuntime().addShutdownHook(onStop);
        try (backend;
                ElasticJob job = ElasticJob.of(backend, ELASTIC_PATIENCE)) {
            if (job.isElastic() && djl && parquetData != null) {
                throw new IllegalArgumentException(
                        "cohort run --elastic with --framework djl: only from the IDX files, not with --data");
            }
            if (job.isElastic() && !djl && config.zeroStage() > 0) {
                throw new IllegalArgumentException("cohort run --elastic with --framework torch: only with --zero 0 "
                        + "(under ZeRO a lost worker's shard of the optimizer state is gone; --framework djl "
                        + "starts that share afresh)");
            }
            long start = System.nanoTime();
            if (parquetData != null) {
                ParquetDataset train =
                        ParquetDataset.open(List.of(parquetData), ColumnMapping.list("features", "label"));
                FashionMnist.Split test = FashionMnist.loadSplit(dataDir, "t10k");
                if (job.backend().isRootWorker()) {
                    out.printf(
                            Locale.ROOT,
                            "opened %s (%d training examples in %d Parquet file(s), %d row groups) and the %d test "
                                    + "images of %s in %.1f s%n",
                            parquetData,
                            train.examples(),
                            train.files().size(),
                            train.rowGroups(),
                            test.count(),
                            dataDir,
                            (System.nanoTime() - start) / 1e9);
                }
                return summarize(
                        djl
                                ? DjlFashionMnistTraining.train(job, config, train, test, out)
                                : FashionMnistTraining.train(job, config, train, test, out),
                        job);
            }
            FashionMnist data = FashionMnist.load(dataDir);
            if (job.backend().isRootWorker()) {
                out.printf(
                        Locale.ROOT,
                        "loaded Fashion-MNIST from %s (%d training, %d test images) in %.1f s%n",
                        dataDir,
                        data.train().count(),
                        data.test().count(),
                        (System.nanoTime() - start) / 1e9);
            }
            return summarize(
                    djl
                            ? DjlFashionMnistTraining.train(job, config, data, out)
                            : FashionMnistTraining.train(job, config, data, out),
                    job);
        } catch (DataFileException | DataException e) {
            return failed("bad data: " + e.getMessage(), e, 1);
        } catch (IOException | BackendUnavailableException e) {
            return failed(e.getMessage(), e, 1);
        } catch (IllegalArgumentException e) {
            return failed(e.getMessage(), e, 2);
        } catch (RuntimeException e) {
            // A collective failed (a lost peer, a timeout) or something else went wrong: said here,
            // before the end is signalled, so that a worker being stopped still prints it.
            err.println("fashion-mnist: failed: " + e);
            e.printStackTrace(err);
            JobEnvironment.recordFailure(e);
            return 1;
        } finally {
            ended.countDown();
            try {
                Runtime.getRuntime().removeShutdownHook(onStop);
            } catch (IllegalStateException e) {
                // The JVM is shutting down; the hook is running or has run.
            }
        }
    }

    /** With {@code --json}, the root writes the summary and its chart; returns the exit code. */
    private int summarize(TrainingSummary summary, ElasticJob job) throws IOException {
        if (json != null && job.backend().isRootWorker()) {
            summary.writeJson(json);
            out.println("summary written to " + json.toAbsolutePath());
            Path chart = TrainingChart.pathFor(json);
            try {
                TrainingChart.write(summary, stepMetrics(), chart);
            } catch (IOException | RuntimeException e) {
                err.println("fashion-mnist: cannot draw the training chart " + chart.toAbsolutePath() + ": " + e);
                return 1;
            }
            out.println("chart written to " + chart.toAbsolutePath());
        }
        return 0;
    }

    /** Rank 0's step metrics so far, where {@code cohort run --metrics-file} asked for them; else none. */
    private static List<MetricsFile.Line> stepMetrics() throws IOException {
        String file = System.getenv(MetricsFile.ENV_FILE);
        return file == null || file.isBlank() || !Files.isRegularFile(Path.of(file))
                ? List.of()
                : MetricsFile.read(Path.of(file));
    }

    /** Says {@code message} as this program, records {@code e} for the launcher, and returns {@code exitCode}. */
    private int failed(String message, Exception e, int exitCode) {
        err.println("fashion-mnist: " + message);
        JobEnvironment.recordFailure(e);
        return exitCode;
    }

    private void awaitEnd(CountDownLatch ended) {
        try {
            if (!ended.await(STOP_REPORT_MILLIS, TimeUnit.MILLISECONDS)) {
                err.println("fashion-mnist: stopped during training");
                err.flush();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private TrainingConfig config() {
        Classifier.Kind kind;
        try {
            kind = Classifier.Kind.valueOf(model.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--model must be mlp or cnn, got '" + model + "'");
        }
        TrainingConfig.Schedule lrSchedule;
        try {
            lrSchedule = TrainingConfig.Schedule.valueOf(schedule.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--lr-schedule must be linear or constant, got '" + schedule + "'");
        }
        return new TrainingConfig(
                kind,
                epochs,
                batchSize,
                lr != null ? lr : TrainingConfig.defaultLr(kind),
                lrSchedule,
                momentum,
                seed,
                threads != null ? threads : threadsFromEnvironment(),
                maxSteps,
                checkpointDir,
                checkpointEvery,
                resume,
                gradCompression.trim().toLowerCase(Locale.ROOT),
                zeroStage,
                precision.trim().toLowerCase(Locale.ROOT),
                elasticBatch());
    }

    private TrainingConfig.ElasticBatch elasticBatch() {
        return switch (elasticBatch.trim().toLowerCase(Locale.ROOT)) {
            case "per-worker" -> TrainingConfig.ElasticBatch.PER_WORKER;
            case "global" -> TrainingConfig.ElasticBatch.GLOBAL;
            default ->
                throw new IllegalArgumentException(
                        "--elastic-batch must be per-worker or global, got '" + elasticBatch + "'");
        };
    }

    private boolean djl() {
        return switch (framework.trim().toLowerCase(Locale.ROOT)) {
            case "torch" -> false;
            case "djl" -> true;
            default -> throw new IllegalArgumentException("--framework must be torch or djl, got '" + framework + "'");
        };
    }

    private static int threadsFromEnvironment() {
        String value = System.getenv(THREADS_ENV);
        if (value == null || value.isBlank()) {
            return 1;
        }
        try {
            return Math.max(1, Integer.parseInt(value.trim()));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(THREADS_ENV + " must be a whole number, got '" + value + "'");
        }
    }
}
