package dev.cohort.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.annotation.JsonNaming;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.cohort.api.DistributeRequest;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.api.steps.TrainingSteps;
import dev.cohort.examples.Classifier;
import dev.cohort.examples.Mlp;
import dev.cohort.examples.SmallCnn;
import dev.cohort.libtorch.LibTorch;
import dev.cohort.torch.Autocast;
import dev.cohort.torch.DistributedOptimizer;
import dev.cohort.torch.TorchDistributor;
import dev.cohort.torch.TorchTraining;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Adam;
import org.bytedeco.pytorch.AdamOptions;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Optimizer;
import org.bytedeco.pytorch.SGD;
import org.bytedeco.pytorch.SGDOptions;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code ./cohort bench train}: data-parallel training throughput, exactly what
 * {@code shared/peers/torch_ddp.py} measures: MLP 784-H-H-10 (H = --hidden, 1024 by default; or one of the demo's
 * models, which {@code scripts/torch_models.py} trains alike in PyTorch), cross-entropy, SGD lr 0.01,
 * batch 64 per rank, random data (16 fixed batches), 1 compute thread per rank; wall time of
 * {@code steps} full steps (forward, loss, backward, gradient averaging, update) on rank 0 between
 * two barriers, after {@code warm} steps.
 */
@Command(name = "train", description = "Training throughput, side by side with torch_ddp.py.")
final class TrainBenchmark extends BenchCommand {

    @Option(names = "--json", paramLabel = "FILE", description = "Write the result as JSON (torch_ddp.py's shape).")
    Path json;

    @Option(
            names = "--scaling",
            description = "Train at world 1 first, with the same settings, and report the scaling efficiency: "
                    + "this world's samples/s over world times world 1's (one node).")
    boolean scaling;

    @Mixin
    TrainSettings settings = new TrainSettings();

    @Override
    public Integer call() throws Exception {
        int world = nodes.world();
        settings.check();
        if (scaling && (world < 2 || nodes.nnodes > 1)) {
            throw new IllegalArgumentException("--scaling needs --world 2 or more on one node (it compares with "
                    + "world 1 on this node); got --world " + world + " --nnodes " + nodes.nnodes);
        }
        Double world1 = scaling ? worldOne() : null;
        if (scaling && world1 == null) {
            return 1;
        }
        Path out = json != null ? json.toAbsolutePath() : Files.createTempFile("cohort-train", ".json");
        List<String> workerArgs = new ArrayList<>(List.of("train-worker", "--json", out.toString()));
        workerArgs.addAll(settings.asArgs());
        int rc = Workers.launch(world, nodes, false, workerArgs);
        if (rc != 0 || !nodes.reports()) {
            return rc;
        }
        Result r = settings.backend.equals("none") && world > 1
                ? Result.independent(out, world)
                : new ObjectMapper().readValue(out.toFile(), Result.class);
        if (world1 != null) {
            double efficiency = r.samplesPerS() / (world * world1);
            ObjectMapper mapper = new ObjectMapper();
            ObjectNode withScaling = mapper.valueToTree(r);
            withScaling.put("world1_samples_per_s", world1).put("scaling_efficiency", efficiency);
            mapper.writerWithDefaultPrettyPrinter().writeValue(out.toFile(), withScaling);
            System.out.printf(
                    java.util.Locale.ROOT,
                    "scaling efficiency %.2f: world %d's samples/s %.0f over %d x world 1's %.0f%n",
                    efficiency,
                    world,
                    r.samplesPerS(),
                    world,
                    world1);
        }
        System.out.printf(
                "%s %s world=%d threads/rank=%d params=%d steps=%d time=%.2fs steps/s=%.1f samples/s=%.0f "
                        + "communication=%.0f%% of the step%s%n",
                r.engine(),
                r.model(),
                r.world(),
                r.threadsPerRank(),
                r.params(),
                r.steps(),
                r.seconds(),
                r.stepsPerS(),
                r.samplesPerS(),
                100 * r.communicationShare(),
                r.cpuMsPerStep() == null
                        ? ""
                        : String.format(java.util.Locale.ROOT, " cpu=%.1f ms/step (all ranks)", r.cpuMsPerStep()));
        if (r.memory() != null) {
            System.out.printf(
                    "optimizer %s, ZeRO stage %d: optimizer state per rank %s MiB, peak RSS per rank %s MiB%n",
                    r.memory().optimizer(),
                    r.memory().zeroStage(),
                    mebibytes(r.memory().optimizerStateBytes()),
                    mebibytes(r.memory().peakRssBytes()));
        }
        System.out.printf(
                "computes with: %s; BLAS %s%n",
                r.version(), r.blas().isEmpty() ? "(none loaded)" : String.join(", ", r.blas()));
        return 0;
    }

    /** Samples/s of the same training at world 1 on this node, or null (said) when it failed. */
    private Double worldOne() throws java.io.IOException {
        Path one = Files.createTempFile("cohort-train-world1", ".json");
        try {
            List<String> args = new ArrayList<>(List.of("train-worker", "--json", one.toString()));
            args.addAll(settings.asArgs());
            if (Workers.launch(1, nodes, false, args) != 0) {
                System.err.println("cohort bench train: the world-1 run for --scaling failed");
                return null;
            }
            double samples =
                    new ObjectMapper().readValue(one.toFile(), Result.class).samplesPerS();
            System.out.printf(java.util.Locale.ROOT, "world 1: samples/s=%.0f%n", samples);
            return samples;
        } finally {
            Files.deleteIfExists(one);
        }
    }

    private static String mebibytes(List<Long> bytes) {
        return bytes.stream()
                .map(b -> String.format(java.util.Locale.ROOT, "%.1f", b / 1048576.0))
                .collect(java.util.stream.Collectors.joining(" "));
    }

    /** One training run's figures; {@code --scaling} adds world1_samples_per_s and scaling_efficiency to its JSON. */
    @com.fasterxml.jackson.annotation.JsonInclude(com.fasterxml.jackson.annotation.JsonInclude.Include.NON_NULL)
    @com.fasterxml.jackson.annotation.JsonIgnoreProperties(ignoreUnknown = true)
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    record Result(
            String engine,
            String model,
            String version,
            int world,
            int threadsPerRank,
            int steps,
            int batchPerRank,
            long params,
            double seconds,
            double stepsPerS,
            double samplesPerS,
            List<String> blas,
            double communicationShare,
            Memory memory,
            Double cpuMsPerStep) {

        /**
         * The ceiling of {@code --backend none} at a world above 1: every rank trains alone at the same time
         * and wrote its own file ({@link Worker#resultFile}); samples/s is their sum, the time the slowest's.
         */
        static Result independent(Path json, int world) throws java.io.IOException {
            ObjectMapper mapper = new ObjectMapper();
            double seconds = 0;
            double samples = 0;
            double cpu = 0;
            Result first = null;
            for (int rank = 0; rank < world; rank++) {
                Path file = Worker.resultFile(json, rank, true);
                Result r = mapper.readValue(file.toFile(), Result.class);
                Files.delete(file);
                first = first == null ? r : first;
                seconds = Math.max(seconds, r.seconds());
                samples += r.samplesPerS();
                cpu += r.cpuMsPerStep() == null ? Double.NaN : r.cpuMsPerStep();
            }
            Result r = new Result(
                    "cohort-none-independent",
                    first.model(),
                    first.version(),
                    world,
                    first.threadsPerRank(),
                    first.steps(),
                    first.batchPerRank(),
                    first.params(),
                    seconds,
                    first.steps() / seconds,
                    samples,
                    first.blas(),
                    0,
                    null,
                    Double.isNaN(cpu) ? null : cpu);
            mapper.writerWithDefaultPrettyPrinter().writeValue(json.toFile(), r);
            return r;
        }
    }

    /**
     * Each rank's memory at the end of the timed steps: the optimizer's state as it serializes it,
     * and the process's peak resident set (VmHWM: JVM, libtorch, model, gradients, buffers, state).
     */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    record Memory(int zeroStage, String optimizer, List<Long> optimizerStateBytes, List<Long> peakRssBytes) {}

    /** CPU time of this whole process (every thread: JIT and GC too) in nanoseconds, or -1 where the JVM cannot tell. */
    static long processCpuNanos() {
        return ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os
                ? os.getProcessCpuTime()
                : -1;
    }

    /** This process's peak resident set in bytes (VmHWM), or -1 where /proc cannot tell. */
    static long peakRss() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmHWM:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
                }
            }
        } catch (java.io.IOException | RuntimeException e) {
            // not Linux
        }
        return -1;
    }

    /**
     * What this process computes with, as torch_ddp.py reports its own: the BLAS libraries it has
     * mapped (from /proc/self/maps, real paths), so a comparison can check both sides.
     */
    static List<String> loadedBlas() {
        java.util.TreeSet<String> found = new java.util.TreeSet<>();
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
                int slash = line.indexOf('/');
                if (slash < 0) {
                    continue;
                }
                Path lib = Path.of(line.substring(slash).trim());
                String name = lib.getFileName().toString();
                if (name.contains("blas") || name.contains("mkl")) {
                    found.add(lib.toRealPath().toString());
                }
            }
        } catch (java.io.IOException | RuntimeException e) {
            return List.of(); // not Linux: nothing to say
        }
        return List.copyOf(found);
    }

    /** The libtorch build Cohort runs (the JavaCPP presets' version), the OpenBLAS it calls and this JVM. */
    static String computeVersion() {
        String presets = torch.class.getPackage().getImplementationVersion();
        return "java " + Runtime.version() + ", libtorch (JavaCPP pytorch) " + (presets != null ? presets : "?")
                + " on " + LibTorch.blas();
    }

    /** The model {@code --model} names. */
    static Classifier model(String name, int hidden) {
        return switch (name) {
            case "demo-mlp" -> new Mlp();
            case "demo-cnn" -> new SmallCnn();
            default -> new Mlp(hidden, hidden);
        };
    }

    @Command(name = "train-worker", hidden = true)
    static final class Worker extends BenchWorker {
        @Mixin
        TrainSettings s = new TrainSettings();

        @Override
        public Integer call() throws Exception {
            if (s.framework.equals("djl")) {
                Result r = DjlTrainWorker.run(s);
                if (r != null) {
                    boolean alone = s.backend.equals("none")
                            && Integer.parseInt(System.getenv().getOrDefault("WORLD_SIZE", "1")) > 1;
                    Path file =
                            resultFile(json, Integer.parseInt(System.getenv().getOrDefault("RANK", "0")), alone);
                    new ObjectMapper().writerWithDefaultPrettyPrinter().writeValue(file.toFile(), r);
                }
                return 0;
            }
            LibTorch.load();
            torch.set_num_threads(1);
            try (DistributedBackend b = Engines.open(s.backend, s.engineOptions)) {
                b.initialize();
                torch.manual_seed(b.rank());
                Classifier model = model(s.model, s.hidden);
                DistributeRequest<Module, Optimizer, Object, Object> request = DistributeRequest.of(
                                (Module) model, optimizer(s.optimizer, model.parameters()), null, null)
                        .withOption(TorchDistributor.GRAD_COMPRESSION, s.gradCompression)
                        .withOption(TorchDistributor.ZERO_STAGE, s.zero)
                        .withOption(TorchDistributor.PRECISION, s.precision);
                if (s.overlap != null) {
                    request = request.withOption(TorchDistributor.OVERLAP, s.overlap);
                }
                // The none engine hands its inputs back (each rank trains alone); 16-bit compute needs
                // the torch integration's optimizer, which averages nothing on a group of one.
                Optimizer optimizer = s.syncOnly
                        ? request.optimizer()
                        : b.name().equals("none") && !s.precision.equals("fp32")
                                ? TorchTraining.distribute(b, request).optimizer()
                                : b.distribute(request).optimizer();
                Runnable sync = s.syncOnly ? syncStep(b) : () -> {};
                int nb = 16;
                Tensor[] xs = new Tensor[nb];
                Tensor[] ys = new Tensor[nb];
                for (int i = 0; i < nb; i++) {
                    xs[i] = torch.randn(s.batch, 1, 28, 28);
                    ys[i] = torch.randint(0, 10, new long[] {s.batch});
                }
                for (int i = 0; i < s.warm; i++) {
                    step(model, optimizer, xs[i % nb], ys[i % nb]);
                    sync.run();
                }
                b.barrier();
                long waited0 = communicationWait(optimizer);
                long cpu0 = processCpuNanos();
                long t0 = System.nanoTime();
                long synced = 0;
                for (int i = 0; i < s.steps; i++) {
                    step(model, optimizer, xs[i % nb], ys[i % nb]);
                    long s0 = System.nanoTime();
                    sync.run();
                    synced += System.nanoTime() - s0;
                }
                b.barrier();
                double seconds = (System.nanoTime() - t0) / 1e9;
                double share = (communicationWait(optimizer) - waited0 + synced) / 1e9 / seconds;
                long cpu = processCpuNanos() - cpu0;
                long[] memory = {
                    optimizer instanceof DistributedOptimizer d ? d.optimizerStateBytes() : -1, peakRss(), cpu
                };
                long[] everyRank = new long[3 * b.worldSize()];
                b.group()
                        .allgather(DenseBuffer.of(memory), DenseBuffer.of(everyRank))
                        .await();
                List<Long> stateBytes = new ArrayList<>();
                List<Long> rss = new ArrayList<>();
                long cpuEveryRank = 0;
                boolean cpuKnown = true;
                for (int r = 0; r < b.worldSize(); r++) {
                    stateBytes.add(everyRank[3 * r]);
                    rss.add(everyRank[3 * r + 1]);
                    cpuEveryRank += everyRank[3 * r + 2];
                    cpuKnown &= everyRank[3 * r + 2] >= 0;
                }
                boolean alone = b.name().equals("none")
                        && Integer.parseInt(System.getenv().getOrDefault("WORLD_SIZE", "1")) > 1;
                if (b.isRootWorker()) {
                    TensorVector params = model.parameters();
                    long count = 0;
                    for (long i = 0; i < params.size(); i++) {
                        count += params.get(i).numel();
                    }
                    int n = b.worldSize();
                    Result r = new Result(
                            "cohort-" + b.name() + (s.syncOnly ? "-sync-only" : "")
                                    + (s.overlap == null ? "" : s.overlap ? "-overlap" : "-no-overlap")
                                    + (s.zero == 0 ? "" : "-zero" + s.zero)
                                    + (s.gradCompression.equals("none") ? "" : "-" + s.gradCompression)
                                    + (s.precision.equals("fp32") ? "" : "-" + s.precision + "-compute"),
                            s.model,
                            computeVersion(),
                            n,
                            torch.get_num_threads(),
                            s.steps,
                            s.batch,
                            count,
                            seconds,
                            s.steps / seconds,
                            (double) s.steps * s.batch * n / seconds,
                            loadedBlas(),
                            share,
                            s.syncOnly ? null : new Memory(s.zero, s.optimizer, stateBytes, rss),
                            cpuKnown ? cpuEveryRank / 1e6 / s.steps : null);
                    Path file =
                            resultFile(json, Integer.parseInt(System.getenv().getOrDefault("RANK", "0")), alone);
                    new ObjectMapper().writerWithDefaultPrettyPrinter().writeValue(file.toFile(), r);
                }
            }
            return 0;
        }

        /** One float allreduced across every rank: the step's synchronization without its data. */
        private static Runnable syncStep(DistributedBackend b) {
            float[] one = new float[1];
            DenseBuffer buffer = DenseBuffer.of(one);
            return () -> b.group().allreduce(buffer, ReduceOp.SUM).await();
        }

        /** The optimizer {@code --optimizer} names, over {@code params}. */
        static Optimizer optimizer(String name, TensorVector params) {
            return switch (name) {
                case "sgd-momentum" -> {
                    SGDOptions options = new SGDOptions(0.01);
                    options.momentum().put(0.9);
                    yield new SGD(params, options);
                }
                case "adam" -> new Adam(params, new AdamOptions(0.001));
                default -> new SGD(params, new SGDOptions(0.01));
            };
        }

        /** Where a rank writes its result: the file asked for, or with --backend none (every rank its own root) one per rank. */
        static Path resultFile(Path json, int rank, boolean alone) {
            return alone ? json.resolveSibling(json.getFileName() + ".rank" + rank) : json;
        }

        /** Nanoseconds the training thread has waited for gradient communication (0 when nothing is distributed). */
        private static long communicationWait(Optimizer optimizer) {
            return optimizer instanceof DistributedOptimizer d ? d.communicationWaitNanos() : 0;
        }

        /** One step; its temporaries are freed at the end of the step, as Python's refcounting would. */
        private static void step(Classifier model, Optimizer optimizer, Tensor x, Tensor y) {
            TrainingSteps.begin(TrainingSteps.Part.DATA).end(x.size(0)); // the batch is in memory: its examples count
            try (PointerScope scope = new PointerScope()) {
                optimizer.zero_grad();
                if (optimizer instanceof DistributedOptimizer d) {
                    Tensor loss;
                    try (Autocast autocast = d.autocast()) {
                        loss = torch.cross_entropy(model.forward(x), y);
                    }
                    d.scaleLoss(loss).backward();
                } else {
                    torch.cross_entropy(model.forward(x), y).backward();
                }
                optimizer.step();
            }
        }
    }
}
