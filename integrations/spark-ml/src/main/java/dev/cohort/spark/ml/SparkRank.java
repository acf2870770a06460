package dev.cohort.spark.ml;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.cohort.api.Backends;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.LaunchEnvironment;
import dev.cohort.api.checkpoint.TrainingPosition;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.data.ColumnMapping;
import dev.cohort.data.LoaderOptions;
import dev.cohort.data.ParquetDataset;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * One rank of a {@link CohortEstimator#fit}, a JVM its Spark task started ({@code
 * dev.cohort.spark.CohortOnSpark}): reads its task's rows from standard input and spills them
 * ({@link ShardSpill}), joins the other ranks, agrees with them on the steps of an epoch (the
 * fewest any rank's shard holds whole batches for), trains the model the factory makes for the
 * settings' epochs through the framework's {@link RankTraining}, each epoch streaming its shard
 * reshuffled, and, on rank 0, leaves the history
 * and the weights for the driver. With a checkpoint directory, rank 0 saves the model, optimizer
 * and history after every epoch, and every rank of a retried stage resumes from there.
 */
public final class SparkRank {

    /** Test-only: rank 1 of the first attempt exits with code 3 after saving this epoch's checkpoint. */
    static final String FAULT_ENV = "COHORT_SPARK_FAULT_AFTER_EPOCH";

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String CHECKPOINT = "model.ckpt";
    private static final String HISTORY = "history.json";

    private SparkRank() {}

    public static void main(String[] args) throws IOException {
        if (args.length != 1) {
            System.err.println("usage: SparkRank SETTINGS-JSON (started by CohortEstimator.fit)");
            System.exit(2);
        }
        TrainSettings settings = TrainSettings.fromJson(args[0]);
        Path work = Path.of(System.getenv("COHORT_SPARK_WORK"));
        Path shard = settings.shardInMemory()
                ? Files.createTempDirectory(Path.of("/dev/shm"), "cohort-shard-")
                : work.resolve("shard");
        try {
            long started = System.nanoTime();
            long rows = ShardSpill.spill(
                    new BufferedInputStream(System.in, 1 << 16), settings.width(), settings.classes(), shard);
            double streamSeconds = (System.nanoTime() - started) / 1e9;
            FitResult result = train(settings, shard, rows, streamSeconds);
            if (result != null) {
                Files.write(Path.of(System.getenv("COHORT_SPARK_RESULT")), result.toBytes());
            }
        } finally {
            deleteTree(shard);
        }
    }

    /** Trains; returns rank 0's result, null on the other ranks. */
    private static FitResult train(TrainSettings settings, Path shard, long rows, double streamSeconds)
            throws IOException {
        Framework framework = Framework.of(settings.framework());
        if (framework == Framework.DJL) {
            DjlRuntime.load(
                    settings.threads()); // before the backend: auto then passes over engines that load JavaCPP's
        }
        try (DistributedBackend backend = Backends.select(null)) {
            backend.initialize();
            long steps = agreedSteps(backend, rows, settings.batchSize());
            ParquetDataset data =
                    ParquetDataset.open(List.of(shard.toString()), ColumnMapping.list("features", "label"));
            LoaderOptions options = new LoaderOptions()
                    .batchSize(settings.batchSize())
                    .seed(settings.seed() + 7919L * backend.rank())
                    .shuffleBuffer(8 * ShardSpill.ROWS_PER_ROW_GROUP)
                    .readers(1)
                    .queueDepth(4);
            try (RankTraining training = framework == Framework.DJL
                    ? new DjlRankTraining(backend, settings, data, options, steps)
                    : new TorchRankTraining(backend, settings, data, options, steps)) {
                List<EpochStats> history = new ArrayList<>();
                Path checkpointDir = settings.checkpointDir().isEmpty() ? null : Path.of(settings.checkpointDir());
                int firstEpoch = 0;
                if (checkpointDir != null && Files.exists(checkpointDir.resolve(CHECKPOINT))) {
                    firstEpoch =
                            training.load(checkpointDir.resolve(CHECKPOINT)).epoch();
                    history.addAll(JSON.readValue(
                            checkpointDir.resolve(HISTORY).toFile(), new TypeReference<List<EpochStats>>() {}));
                    System.out.println("resuming at epoch " + (firstEpoch + 1) + " from " + checkpointDir);
                }
                for (int epoch = firstEpoch; epoch < settings.epochs(); epoch++) {
                    EpochStats stats = epoch(backend, training, epoch, steps, settings.batchSize());
                    history.add(stats);
                    if (backend.isRootWorker()) {
                        System.out.printf(
                                "epoch %d/%d: loss %.4f, accuracy %.4f, %.1f s, %.0f samples/s%n",
                                stats.epoch(),
                                settings.epochs(),
                                stats.loss(),
                                stats.accuracy(),
                                stats.seconds(),
                                stats.samplesPerSec());
                        if (checkpointDir != null) {
                            Files.createDirectories(checkpointDir);
                            JSON.writeValue(checkpointDir.resolve(HISTORY).toFile(), history);
                            training.save(
                                    checkpointDir.resolve(CHECKPOINT),
                                    new TrainingPosition(epoch + 1, 0, (epoch + 1) * steps));
                        }
                    }
                    backend.barrier();
                    faultDrill(backend, epoch + 1);
                }
                if (!backend.isRootWorker()) {
                    return null;
                }
                ModelSpec spec =
                        new ModelSpec(framework, settings.modelFactory(), settings.width(), settings.classes());
                return new FitResult(spec, history, training.weights(), streamSeconds);
            }
        }
    }

    private static EpochStats epoch(
            DistributedBackend backend, RankTraining training, int epoch, long steps, int batchSize) {
        long started = System.nanoTime();
        double[] sums = training.epoch(epoch, steps);
        double seconds = (System.nanoTime() - started) / 1e9;
        double[] means = backend.averageAll(new double[] {sums[0] / steps, sums[1] / (double) (steps * batchSize)});
        return new EpochStats(
                epoch + 1,
                means[0],
                means[1],
                seconds,
                steps * batchSize * (double) backend.worldSize() / seconds,
                Integer.parseInt(System.getenv().getOrDefault(LaunchEnvironment.RESTART_COUNT, "0")));
    }

    /**
     * The steps of an epoch on every rank: whole batches of the smallest shard, so that every rank
     * runs the same number of steps (each reshuffles its own shard and leaves the rest of it for
     * another epoch).
     *
     * @throws IllegalStateException when some rank's shard holds less than one batch
     */
    static long agreedSteps(DistributedBackend backend, long rows, int batchSize) {
        long[] fewest = {rows};
        backend.group().allreduce(DenseBuffer.of(fewest), ReduceOp.MIN).await();
        long steps = fewest[0] / batchSize;
        if (steps == 0) {
            throw new IllegalStateException("a worker's share of the DataFrame holds " + fewest[0]
                    + " rows, fewer than the batch size " + batchSize
                    + ": use fewer workers, a smaller batch size or more rows");
        }
        return steps;
    }

    private static void faultDrill(DistributedBackend backend, int epochsDone) {
        String after = System.getenv(FAULT_ENV);
        if (after != null
                && Integer.parseInt(after) == epochsDone
                && backend.rank() == 1
                && "0".equals(System.getenv(LaunchEnvironment.RESTART_COUNT))) {
            System.out.println("fault drill: rank 1 exits after epoch " + epochsDone);
            System.out.flush();
            Runtime.getRuntime().halt(3);
        }
    }

    private static void deleteTree(Path dir) {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            // left in the temporary directory
        }
    }
}
