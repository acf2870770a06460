package dev.cohort.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.annotation.JsonNaming;
import dev.cohort.api.DistributeRequest;
import dev.cohort.api.Distributed;
import dev.cohort.api.DistributedBackend;
import dev.cohort.data.Batch;
import dev.cohort.data.ColumnMapping;
import dev.cohort.data.DataPosition;
import dev.cohort.data.LoaderOptions;
import dev.cohort.data.ParquetDataset;
import dev.cohort.data.ShardLoader;
import dev.cohort.examples.Mlp;
import dev.cohort.libtorch.LibTorch;
import dev.cohort.torch.MiniBatch;
import dev.cohort.torch.ParquetLoader;
import dev.cohort.torch.ShardedLoader;
import dev.cohort.torch.TensorSamples;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Optimizer;
import org.bytedeco.pytorch.SGD;
import org.bytedeco.pytorch.SGDOptions;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * {@code cohort bench data --train}: the demo's MLP trained with {@code distribute()} from the
 * Parquet files ({@link ParquetLoader}, readers decoding ahead) and from the same examples held in
 * memory ({@link TensorSamples} in a {@link ShardedLoader}, the demo's way), one run of each in
 * turn, {@code --repeats} times. A run times {@code --steps} steps on rank 0 between two barriers
 * after {@code --warm}, epochs following each other, and the time its training thread spent getting
 * the next batch.
 */
final class DataTraining {

    private DataTraining() {}

    /** One run, as rank 0 writes it. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    record Run(
            String source, int world, int batch, int steps, double seconds, double samplesPerS, double waitMsPerStep) {}

    /** The comparison, as the command writes it to --json. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    record Result(
            String engine,
            String backend,
            int world,
            int readers,
            int batch,
            long examples,
            double parquetSamplesPerS,
            double memorySamplesPerS,
            double ratio,
            double parquetWaitMsPerStep,
            List<Run> runs) {}

    /** Runs both sources in turn and prints the medians and their ratio. */
    static int compare(DataBenchmark.Settings settings, Nodes nodes, int world, Path json) throws Exception {
        ObjectMapper mapper = new ObjectMapper();
        List<Run> runs = new ArrayList<>();
        Path out = Files.createTempFile("cohort-data-train", ".json");
        try {
            for (int i = 0; i < settings.repeats; i++) {
                for (String source : List.of("memory", "parquet")) {
                    settings.source = source;
                    List<String> args = new ArrayList<>(List.of("data-worker", "--json", out.toString()));
                    args.addAll(settings.asArgs());
                    int rc = Workers.launch(world, nodes, false, args);
                    if (rc != 0) {
                        return rc;
                    }
                    if (!nodes.reports()) {
                        continue;
                    }
                    Run run = mapper.readValue(out.toFile(), Run.class);
                    runs.add(run);
                    System.out.printf(
                            Locale.ROOT,
                            "%-7s world=%d batch=%d steps=%d samples/s=%.0f wait=%.3f ms/step%n",
                            run.source(),
                            run.world(),
                            run.batch(),
                            run.steps(),
                            run.samplesPerS(),
                            run.waitMsPerStep());
                }
            }
        } finally {
            Files.deleteIfExists(out);
        }
        if (!nodes.reports()) {
            return 0;
        }
        double parquet = median(runs, "parquet", Run::samplesPerS);
        double memory = median(runs, "memory", Run::samplesPerS);
        double wait = median(runs, "parquet", Run::waitMsPerStep);
        Result result = new Result(
                "cohort-data-train",
                settings.backend(),
                world,
                settings.readers,
                settings.batch,
                ParquetDataset.open(List.of(settings.data), ColumnMapping.list("features", "label"))
                        .examples(),
                parquet,
                memory,
                parquet / memory,
                wait,
                runs);
        System.out.printf(
                Locale.ROOT,
                "median samples/s: parquet %.0f, memory %.0f, ratio %.3f; parquet's wait for data %.3f ms/step%n",
                parquet,
                memory,
                parquet / memory,
                wait);
        if (json != null) {
            mapper.writerWithDefaultPrettyPrinter().writeValue(json.toFile(), result);
        }
        return 0;
    }

    private static double median(List<Run> runs, String source, java.util.function.ToDoubleFunction<Run> value) {
        double[] v = runs.stream()
                .filter(r -> r.source().equals(source))
                .mapToDouble(value)
                .sorted()
                .toArray();
        int n = v.length;
        return n == 0 ? Double.NaN : n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    }

    /** A worker's run: trains from {@code s.source} and, on rank 0, writes a {@link Run} to {@code json}. */
    static void run(DataBenchmark.Settings s, Path json) throws IOException {
        LibTorch.load();
        torch.set_num_threads(1);
        try (DistributedBackend b = Engines.open(s.backend(), List.of())) {
            b.initialize();
            torch.manual_seed(42);
            ParquetDataset files = ParquetDataset.open(List.of(s.data), ColumnMapping.list("features", "label"));
            Mlp model = new Mlp();
            SGDOptions sgd = new SGDOptions(0.05);
            sgd.momentum().put(0.9);
            Object data = s.source.equals("memory")
                    ? ShardedLoader.of(inMemory(files), s.batch, true, 42)
                    : ParquetLoader.of(
                            files,
                            new LoaderOptions()
                                    .batchSize(s.batch)
                                    .seed(42)
                                    .shuffleBuffer(s.shuffleBuffer)
                                    .readers(s.readers));
            Distributed<Module, Optimizer, Object, Object> d = b.distribute(
                    DistributeRequest.of((Module) model, (Optimizer) new SGD(model.parameters(), sgd), data, null));
            Optimizer optimizer = d.optimizer();
            Batches batches = new Batches(d.trainingData());
            try {
                for (int i = 0; i < s.warm; i++) {
                    step(model, optimizer, batches.next());
                }
                b.barrier();
                batches.waited = 0;
                long t0 = System.nanoTime();
                for (int i = 0; i < s.steps; i++) {
                    step(model, optimizer, batches.next());
                }
                b.barrier();
                double seconds = (System.nanoTime() - t0) / 1e9;
                if (b.isRootWorker()) {
                    Run run = new Run(
                            s.source,
                            b.worldSize(),
                            s.batch,
                            s.steps,
                            seconds,
                            (double) s.steps * s.batch * b.worldSize() / seconds,
                            batches.waited / 1e6 / s.steps);
                    new ObjectMapper().writerWithDefaultPrettyPrinter().writeValue(json.toFile(), run);
                }
            } finally {
                batches.close();
            }
        }
    }

    private static void step(Module model, Optimizer optimizer, MiniBatch batch) {
        try (PointerScope scope = new PointerScope()) {
            optimizer.zero_grad();
            torch.cross_entropy(((Mlp) model).forward(batch.inputs()), batch.targets())
                    .backward();
            optimizer.step();
        }
    }

    /** Every example of {@code files} in two tensors, read once in file order. */
    private static TensorSamples inMemory(ParquetDataset files) {
        int width = files.width();
        float[] features = new float[Math.toIntExact(files.examples() * width)];
        long[] labels = new long[Math.toIntExact(files.examples())];
        int at = 0;
        try (ShardLoader all = files.loader(new LoaderOptions().batchSize(4096), DataPosition.start(0))) {
            while (all.hasNext()) {
                Batch batch = all.next();
                batch.features().get(0, features, at * width, batch.rows() * width);
                for (int i = 0; i < batch.rows(); i++) {
                    labels[at + i] = batch.hasLongLabels()
                            ? batch.longLabels().get(i)
                            : batch.intLabels().get(i);
                }
                at += batch.rows();
            }
        }
        Tensor x = torch.tensor(features).reshape(files.examples(), width);
        Tensor y = torch.tensor(labels);
        return new TensorSamples(x, y);
    }

    /** The training data's batches epoch after epoch, timing the training thread's wait for each. */
    private static final class Batches {
        private final Object data;
        private int epoch;
        private Iterator<MiniBatch> current;
        private ParquetLoader.Epoch open;
        long waited;

        Batches(Object data) {
            this.data = data;
        }

        MiniBatch next() {
            long t0 = System.nanoTime();
            while (current == null || !current.hasNext()) {
                close();
                if (data instanceof ParquetLoader loader) {
                    open = loader.epoch(epoch);
                    current = open.iterator();
                } else {
                    current = ((ShardedLoader) data).epoch(epoch).iterator();
                }
                epoch++;
            }
            MiniBatch batch = current.next();
            waited += System.nanoTime() - t0;
            return batch;
        }

        void close() {
            if (open != null) {
                open.close();
                open = null;
            }
        }
    }
}
