package dev.cohort.bench;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.annotation.JsonNaming;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.data.Batch;
import dev.cohort.data.ColumnMapping;
import dev.cohort.data.Convert;
import dev.cohort.data.DataPosition;
import dev.cohort.data.LoaderOptions;
import dev.cohort.data.ParquetDataset;
import dev.cohort.data.ShardLoader;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code ./cohort bench data}: how fast the data module delivers batches, and how much memory a rank
 * holds while it does, as {@code scripts/peer_data_loader.py --mode loader} measures PyTorch's
 * DataLoader. Every rank of {@code --world} (one process each, at the same time) reads its share of
 * each epoch with {@code --readers} reader threads into batches of {@code --batch}, and a consumer
 * that only touches each batch; a rank's figure is its examples over its time, per epoch.
 */
@Command(
        name = "data",
        description = "Samples/s the data module delivers per rank, and peak memory, beside peer_data_loader.py.")
final class DataBenchmark extends BenchCommand {

    @Option(names = "--json", paramLabel = "FILE", description = "Write the result as JSON.")
    Path json;

    @Mixin
    Settings settings = new Settings();

    /** The options the command hands on, unchanged, to each {@code data-worker}. */
    static final class Settings {
        @Option(names = "--data", paramLabel = "DIR|URI", descriptionKey = "data.data")
        String data;

        @Option(names = "--rows-per-row-group", paramLabel = "N", descriptionKey = "data.rows-per-row-group")
        int rowsPerRowGroup = 10_000;

        @Option(names = "--readers", paramLabel = "N", descriptionKey = "data.readers")
        int readers = 1;

        @Option(names = "--batch", paramLabel = "N", descriptionKey = "data.batch")
        int batch = 64;

        @Option(names = "--shuffle-buffer", paramLabel = "N", descriptionKey = "data.shuffle-buffer")
        int shuffleBuffer = 4096;

        @Option(names = "--epochs", paramLabel = "N", descriptionKey = "data.epochs")
        int epochs = 3;

        @Option(names = "--backend", descriptionKey = "data.backend")
        String backend;

        @Option(names = "--train", descriptionKey = "data.train")
        boolean train;

        @Option(names = "--steps", paramLabel = "N", descriptionKey = "data.steps")
        int steps = 400;

        @Option(names = "--warm", paramLabel = "N", descriptionKey = "data.warm")
        int warm = 20;

        @Option(names = "--repeats", paramLabel = "N", descriptionKey = "data.repeats")
        int repeats = 3;

        @Option(names = "--source", hidden = true)
        String source = "parquet";

        String backend() {
            return backend != null ? backend : train ? "gloo" : "tcp";
        }

        void check() {
            if (readers < 1
                    || batch < 1
                    || epochs < 1
                    || rowsPerRowGroup < 1
                    || shuffleBuffer < 0
                    || steps < 1
                    || warm < 0
                    || repeats < 1) {
                throw new IllegalArgumentException(
                        "--readers, --batch, --epochs, --rows-per-row-group, --steps and --repeats must be >= 1, "
                                + "--shuffle-buffer and --warm >= 0");
            }
        }

        List<String> asArgs() {
            List<String> args = new ArrayList<>(List.of(
                    "--data", data,
                    "--readers", Integer.toString(readers),
                    "--batch", Integer.toString(batch),
                    "--shuffle-buffer", Integer.toString(shuffleBuffer),
                    "--epochs", Integer.toString(epochs),
                    "--backend", backend(),
                    "--steps", Integer.toString(steps),
                    "--warm", Integer.toString(warm),
                    "--source", source));
            if (train) {
                args.add("--train");
            }
            return args;
        }
    }

    @Override
    public Integer call() throws Exception {
        settings.check();
        int world = nodes.world();
        Path converted = null;
        if (settings.data == null) {
            converted = Files.createTempDirectory("cohort-bench-data");
            Path idx = Path.of(dev.cohort.examples.FashionMnist.DEFAULT_DIR);
            Convert.idx(
                    idx.resolve("train-images-idx3-ubyte.gz"),
                    idx.resolve("train-labels-idx1-ubyte.gz"),
                    converted.toString(),
                    settings.rowsPerRowGroup,
                    Integer.MAX_VALUE);
            settings.data = converted.toString();
        }
        try {
            if (settings.train) {
                return DataTraining.compare(settings, nodes, world, json);
            }
            Path out = json != null ? json.toAbsolutePath() : Files.createTempFile("cohort-data", ".json");
            List<String> workerArgs = new ArrayList<>(List.of("data-worker", "--json", out.toString()));
            workerArgs.addAll(settings.asArgs());
            int rc = Workers.launch(world, nodes, false, workerArgs);
            if (rc != 0 || !nodes.reports()) {
                return rc;
            }
            Result r = new ObjectMapper().readValue(out.toFile(), Result.class);
            System.out.printf(
                    Locale.ROOT,
                    "cohort-data world=%d readers/rank=%d batch=%d examples=%d (%.0f MiB in %d row groups) "
                            + "samples/s per rank=%s (median of %d epochs; slowest rank %.0f) wait=%.3f ms/batch "
                            + "peak RSS per rank=%s MiB%n",
                    r.world(),
                    r.readers(),
                    r.batch(),
                    r.examples(),
                    r.datasetBytes() / 1048576.0,
                    r.rowGroups(),
                    r.samplesPerSPerRank().stream()
                            .map(v -> String.format(Locale.ROOT, "%.0f", v))
                            .toList(),
                    r.epochs(),
                    r.samplesPerS(),
                    r.waitMsPerBatch(),
                    r.peakRssBytes().stream()
                            .map(b -> String.format(Locale.ROOT, "%.0f", b / 1048576.0))
                            .toList());
            return 0;
        } finally {
            if (converted != null) {
                deleteTree(converted);
            }
        }
    }

    private static void deleteTree(Path dir) throws IOException {
        try (var files = Files.walk(dir)) {
            for (Path p : files.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }

    /**
     * The run, as rank 0 writes it: {@code samples_per_s} is the slowest rank's median (the rate the
     * job can train at); the per-rank lists are in rank order.
     */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    record Result(
            String engine,
            String version,
            int world,
            int readers,
            int batch,
            int epochs,
            long examples,
            int rowGroups,
            long datasetBytes,
            double samplesPerS,
            @JsonProperty("samples_per_s_per_rank") List<Double> samplesPerSPerRank,
            List<Double> runsSamplesPerS,
            double waitMsPerBatch,
            List<Long> peakRssBytes) {}

    @Command(name = "data-worker", hidden = true)
    static final class Worker extends BenchWorker {
        @Mixin
        Settings s = new Settings();

        @Override
        public Integer call() throws Exception {
            if (s.train) {
                DataTraining.run(s, json);
                return 0;
            }
            try (DistributedBackend b = Engines.open(s.backend(), List.of())) {
                b.initialize();
                ParquetDataset dataset = ParquetDataset.open(List.of(s.data), ColumnMapping.list("features", "label"));
                LoaderOptions options = new LoaderOptions()
                        .rank(b.rank(), b.worldSize())
                        .batchSize(s.batch)
                        .seed(42)
                        .shuffleBuffer(s.shuffleBuffer)
                        .readers(s.readers);
                double[] rates = new double[s.epochs];
                long waited = 0;
                long batches = 0;
                float touched = 0;
                // One untimed epoch first: class loading, JIT and the page cache.
                for (int epoch = 0; epoch <= s.epochs; epoch++) {
                    b.barrier();
                    long examples = 0;
                    long t0 = System.nanoTime();
                    try (ShardLoader loader = dataset.loader(options, DataPosition.start(epoch))) {
                        while (loader.hasNext()) {
                            Batch batch = loader.next();
                            touched += batch.features().get(0);
                            examples += batch.rows();
                            if (epoch > 0) {
                                waited += batch.waitNanos();
                                batches++;
                            }
                        }
                    }
                    if (epoch > 0) {
                        rates[epoch - 1] = examples / ((System.nanoTime() - t0) / 1e9);
                    }
                }
                if (Float.isNaN(touched)) {
                    System.err.println("a NaN in the features"); // keeps the touch from being optimized away
                }
                double median = median(rates);
                double[] mine = new double[s.epochs + 3];
                System.arraycopy(rates, 0, mine, 0, s.epochs);
                mine[s.epochs] = median;
                mine[s.epochs + 1] = batches == 0 ? 0 : waited / 1e6 / batches;
                mine[s.epochs + 2] = TrainBenchmark.peakRss();
                double[] all = new double[mine.length * b.worldSize()];
                b.group().allgather(DenseBuffer.of(mine), DenseBuffer.of(all)).await();
                if (b.isRootWorker()) {
                    List<Double> perRank = new ArrayList<>();
                    List<Double> runs = new ArrayList<>();
                    List<Long> rss = new ArrayList<>();
                    double wait = 0;
                    for (int r = 0; r < b.worldSize(); r++) {
                        int at = r * mine.length;
                        for (int e = 0; e < s.epochs; e++) {
                            runs.add(all[at + e]);
                        }
                        perRank.add(all[at + s.epochs]);
                        wait = Math.max(wait, all[at + s.epochs + 1]);
                        rss.add((long) all[at + s.epochs + 2]);
                    }
                    Result r = new Result(
                            "cohort-data",
                            "java " + Runtime.version() + ", parquet-hadoop "
                                    + String.valueOf(org.apache.parquet.hadoop.ParquetFileReader.class
                                            .getPackage()
                                            .getImplementationVersion()),
                            b.worldSize(),
                            s.readers,
                            s.batch,
                            s.epochs,
                            dataset.examples(),
                            dataset.rowGroups(),
                            bytes(dataset.files()),
                            perRank.stream()
                                    .mapToDouble(Double::doubleValue)
                                    .min()
                                    .orElse(0),
                            perRank,
                            runs,
                            wait,
                            rss);
                    new ObjectMapper().writerWithDefaultPrettyPrinter().writeValue(json.toFile(), r);
                }
            }
            return 0;
        }

        private static double median(double[] values) {
            double[] sorted = values.clone();
            Arrays.sort(sorted);
            int n = sorted.length;
            return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
        }

        /** The files' sizes in bytes, where they are local; -1 for other file systems. */
        private static long bytes(List<String> files) {
            long sum = 0;
            for (String f : files) {
                try {
                    sum += Files.size(Path.of(
                            f.startsWith("file:") ? java.net.URI.create(f).getPath() : f));
                } catch (IOException | RuntimeException e) {
                    return -1;
                }
            }
            return sum;
        }
    }
}
