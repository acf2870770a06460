package dev.cohort.bench;

import dev.cohort.api.Backends;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.collective.BufferAllocator;
import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.runtime.threads.ThreadsBackend;
import dev.cohort.runtime.threads.ThreadsWorld;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.FloatBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code ./cohort bench collectives}: allreduce over a range of sizes; broadcast, allgather, reduce,
 * gather, scatter and all-to-all at 16 MiB (the last four as scripts/peer_rooted_collectives.py
 * times the peers'); and barrier latency, timed exactly as the PyTorch peer script ({@code torch_collectives.py}) does:
 * per iteration an untimed barrier, then the timed operation on every rank; the iteration's time
 * is the slowest rank's; the result is the median (and minimum) over iterations. Bus bandwidth as
 * in nccl-tests: allreduce 2(n-1)/n x bytes/time, broadcast bytes/time, allgather
 * (n-1)/n x n x bytes/time. Buffers are direct float32 (wrapped, never copied, by Gloo); with
 * {@code --in-place} the allreduce buffers come from the group's allocator (the shm engine's arena).
 *
 * <p>Warm-up: the peers run compiled code from their first call; a JVM runs the interpreter, then
 * C1, then C2, and the Vector API kernels fall back to slow Java code until C2 compiles them (an
 * order of magnitude slower). So before anything is timed,
 * {@value #JIT_WARMUP_CALLS} small untimed calls run, and each measured operation then repeats
 * untimed, after the peer script's own warm-up count, until it stops getting faster (see
 * {@link WarmUp}) or {@code --warmup-ms} have passed. With ranks pinned to one core each, the JIT
 * compiler shares that core with a rank spinning in barriers, and compiling the path can take
 * seconds (measurements: docs/lab/PERFORMANCE-LOG.md). What is timed is the steady state a
 * training job runs in after its first seconds.
 */
@Command(
        name = "collectives",
        description = "Collective latency and bandwidth, side by side with torch_collectives.py.")
final class CollectivesBenchmark extends BenchCommand {

    static final List<Long> DEFAULT_SIZES =
            List.of(4 * Sizes.KIB, 64 * Sizes.KIB, Sizes.MIB, 16 * Sizes.MIB, 64 * Sizes.MIB, 256 * Sizes.MIB);

    @Mixin
    Settings settings = new Settings();

    @Option(names = "--json", descriptionKey = "collectives.json", paramLabel = "FILE")
    Path json;

    @Option(names = "--no-chart", description = "With --json, no chart beside it.")
    boolean noChart;

    @Option(names = "--timeout", descriptionKey = "collectives.timeout", paramLabel = "SECONDS")
    int timeoutSeconds = 900;

    @Option(names = "--in-place", descriptionKey = "collectives.in-place")
    boolean inPlace;

    /**
     * The options the command hands on, unchanged, to each {@code collectives-worker}
     * ({@code --in-place} is not one of them: the worker's takes a value, as scripts give it).
     */
    static final class Settings {
        @Option(names = "--backend", descriptionKey = "collectives.backend")
        String backend = "gloo";

        @Option(names = "--sizes", description = "Allreduce sizes, e.g. 4K,1M,16M. Default: 4K,64K,1M,16M,64M,256M.")
        String sizes;

        @Option(names = "--engine-option", descriptionKey = "collectives.engine-option", paramLabel = "OPTION")
        List<String> engineOptions = new ArrayList<>();

        @Option(names = "--warmup-ms", descriptionKey = "collectives.warmup-ms", paramLabel = "MS")
        int warmupMs = 6000;

        /** {@code --backend}, lower-case. */
        String engine() {
            return backend.toLowerCase(Locale.ROOT);
        }

        /** {@code --sizes} in bytes, or the default sizes. */
        List<Long> sizeList() {
            return sizes == null ? DEFAULT_SIZES : Sizes.parse(sizes);
        }

        /** These settings as a worker's options. */
        List<String> asArgs() {
            List<String> args = new ArrayList<>(List.of(
                    "--backend", engine(), "--sizes", join(sizeList()), "--warmup-ms", Integer.toString(warmupMs)));
            engineOptions.forEach(o -> args.add("--engine-option=" + o));
            return args;
        }
    }

    @Override
    public Integer call() throws Exception {
        int world = nodes.world();
        List<Long> sizeList = settings.sizeList();
        Path out = json != null ? json.toAbsolutePath() : Files.createTempFile("cohort-collectives", ".json");
        String name = settings.engine();
        if (name.equals(ThreadsBackend.NAME)) {
            if (nodes.nnodes > 1) {
                throw new IllegalArgumentException(
                        "the threads backend runs in one JVM; --nnodes needs a process backend");
            }
            ThreadsWorld threads = new ThreadsWorld(world);
            threads.runAll(
                    rank -> {
                        runRank(threads.group(rank), ThreadsBackend.NAME, sizeList, out, inPlace, settings.warmupMs);
                        return null;
                    },
                    Duration.ofSeconds(timeoutSeconds));
        } else {
            if (!Backends.names().contains(name)) {
                throw new IllegalArgumentException(
                        "unknown backend '" + settings.backend + "'; available: " + Backends.names());
            }
            List<String> workerArgs =
                    new ArrayList<>(List.of("collectives-worker", "--json", out.toString(), "--in-place=" + inPlace));
            workerArgs.addAll(settings.asArgs());
            int rc = Workers.launch(world, nodes, name.equals("shm"), workerArgs);
            if (rc != 0 || !nodes.reports()) {
                return rc;
            }
        }
        System.out.print(Report.table(Files.readString(out)));
        if (json != null && !noChart) {
            Path png = BenchChart.pngFor(out);
            BenchChart.Series series = BenchChart.Series.of(out.toString());
            BenchChart.write(List.of(series), png, "allreduce by size: " + series.label());
            System.out.println("chart written to " + png);
        }
        return 0;
    }

    /** The per-rank side, started by {@link CollectivesBenchmark} in each worker process. */
    @Command(name = "collectives-worker", hidden = true)
    static final class Worker extends BenchWorker {
        @Mixin
        Settings s = new Settings();

        @Option(names = "--in-place", arity = "1")
        boolean inPlace;

        @Override
        public Integer call() {
            try (DistributedBackend b = Engines.open(s.backend, s.engineOptions)) {
                b.initialize();
                runRank(b.group(), b.name(), s.sizeList(), json, inPlace, s.warmupMs);
            }
            return 0;
        }
    }

    /** Untimed calls made once before anything is timed, so the JIT has compiled the hot paths. */
    static final int JIT_WARMUP_CALLS = 2000;

    static void runRank(
            ProcessGroup group, String engine, List<Long> sizeList, Path out, boolean inPlace, int warmupMs) {
        long warmupNanos = warmupMs * 1_000_000L;
        int n = group.size();
        BufferAllocator allocator = !inPlace
                ? null
                : group.allocator()
                        .orElseThrow(() -> new IllegalArgumentException("--in-place: the " + engine
                                + " engine offers no allocator for buffers it moves in place (shm does)"));
        warmUpJit(group, allocator);
        List<Report.Row> rows = new ArrayList<>();
        for (long bytes : sizeList) {
            int[] plan = iterations(bytes);
            int count = (int) (bytes / 4);
            DenseBuffer data = allocator == null
                    ? DenseBuffer.allocateDirect(DataType.FLOAT32, count)
                    : allocator
                            .allocate(DataType.FLOAT32, count)
                            .orElseThrow(() -> new IllegalStateException(
                                    "--in-place: no room for " + Sizes.format(bytes) + " in " + allocator.describe()));
            fill(data);
            Runnable scale = () -> scale(data, 1.0f / n);
            double[] t = timed(
                    group, () -> group.allreduce(data, ReduceOp.SUM).await(), plan[0], warmupNanos, plan[1], scale);
            rows.add(Report.Row.of("allreduce", bytes, plan[1], t, bytes / t[0] / 1e9, 2.0 * (n - 1) / n));
            if (allocator != null) {
                allocator.release(data);
            }
        }
        long big = 16 * Sizes.MIB;
        DenseBuffer data = DenseBuffer.allocateDirect(DataType.FLOAT32, (int) (big / 4));
        fill(data);
        double[] t = timed(group, () -> group.broadcast(data, 0).await(), 5, warmupNanos, 30, null);
        rows.add(Report.Row.of("broadcast", big, 30, t, big / t[0] / 1e9, 1.0));
        DenseBuffer gathered = DenseBuffer.allocateDirect(DataType.FLOAT32, (int) (big / 4) * n);
        t = timed(group, () -> group.allgather(data, gathered).await(), 5, warmupNanos, 30, null);
        rows.add(Report.Row.of("allgather", big, 30, t, n * big / t[0] / 1e9, (n - 1.0) / n));
        rooted(group, big, warmupNanos, rows);
        t = timed(group, () -> group.barrier().await(), 50, warmupNanos, 500, null);
        rows.add(Report.Row.of("barrier", 0, 500, t, 0, 0));
        if (group.rank() == 0) {
            try {
                Files.writeString(
                        out, Report.json("cohort-" + engine + (inPlace ? " (allreduce in place)" : ""), n, rows));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        group.barrier().await();
    }

    /**
     * Reduce, gather, scatter, all-to-all and ping-pong, as scripts/peer_rooted_collectives.py
     * times the peers': {@code bytes} per rank for reduce and all-to-all; gather collects
     * {@code bytes/n} from every rank at rank 0, scatter sends {@code bytes/n} to every rank;
     * ping-pong: ranks 0 and 1 send a message back and forth (4 bytes: latency; {@code bytes}:
     * bandwidth), reported one way (half the round trip).
     */
    private static void rooted(ProcessGroup group, long bytes, long warmupNanos, List<Report.Row> rows) {
        int n = group.size();
        int count = (int) (bytes / 4);
        int part = count / n;
        DenseBuffer data = DenseBuffer.allocateDirect(DataType.FLOAT32, count);
        DenseBuffer out = DenseBuffer.allocateDirect(DataType.FLOAT32, part * n);
        DenseBuffer piece = DenseBuffer.allocateDirect(DataType.FLOAT32, part);
        fill(data);
        fill(piece);
        boolean root = group.rank() == 0;
        double share = (n - 1.0) / n;
        double[] t = timed(
                group,
                () -> group.reduce(data, ReduceOp.SUM, 0).await(),
                5,
                warmupNanos,
                30,
                root ? () -> scale(data, 1.0f / n) : null);
        rows.add(Report.Row.of("reduce", bytes, 30, t, bytes / t[0] / 1e9, 1.0));
        t = timed(group, () -> group.gather(piece, root ? out : null, 0).await(), 5, warmupNanos, 30, null);
        rows.add(Report.Row.of("gather", bytes, 30, t, bytes / t[0] / 1e9, share));
        t = timed(group, () -> group.scatter(root ? out : null, piece, 0).await(), 5, warmupNanos, 30, null);
        rows.add(Report.Row.of("scatter", bytes, 30, t, bytes / t[0] / 1e9, share));
        DenseBuffer blocks = data.slice(0, part * n);
        t = timed(group, () -> group.alltoall(blocks, out).await(), 5, warmupNanos, 30, null);
        rows.add(Report.Row.of("alltoall", bytes, 30, t, bytes / t[0] / 1e9, share));
        for (long size : new long[] {4, bytes}) {
            DenseBuffer message = DenseBuffer.allocateDirect(DataType.FLOAT32, (int) (size / 4));
            Runnable pingPong = () -> {
                if (group.rank() == 0) {
                    group.send(message, 1, 0).await();
                    group.recv(message, 1, 0).await();
                } else if (group.rank() == 1) {
                    group.recv(message, 0, 0).await();
                    group.send(message, 0, 0).await();
                }
            };
            int iters = size <= Sizes.MIB ? 200 : 30;
            double[] roundTrip = timed(group, pingPong, size <= Sizes.MIB ? 20 : 5, warmupNanos, iters, null);
            double[] oneWay = {roundTrip[0] / 2, roundTrip[1] / 2};
            rows.add(Report.Row.of("pingpong", size, iters, oneWay, size / oneWay[0] / 1e9, 1.0));
        }
    }

    /**
     * Steady state for a JVM: the peers run compiled code from the first call, Cohort's Java path
     * (and the shm engine's Vector API kernels, very slow until C2 compiles them) needs a few
     * thousand calls first. Small allreduces of several sizes and barriers, untimed, on buffers
     * like the timed ones (from {@code allocator} when not null).
     */
    static void warmUpJit(ProcessGroup group, BufferAllocator allocator) {
        DenseBuffer small = allocator == null
                ? DenseBuffer.allocateDirect(DataType.FLOAT32, 1024)
                : allocator.allocate(DataType.FLOAT32, 1024).orElseThrow();
        DenseBuffer medium = allocator == null
                ? DenseBuffer.allocateDirect(DataType.FLOAT32, 16 * 1024)
                : allocator.allocate(DataType.FLOAT32, 16 * 1024).orElseThrow();
        for (int i = 0; i < JIT_WARMUP_CALLS; i++) {
            group.allreduce(i % 4 == 0 ? medium : small, ReduceOp.SUM).await();
            if (i % 8 == 0) {
                group.barrier().await();
            }
        }
        if (allocator != null) {
            allocator.release(small);
            allocator.release(medium);
        }
    }

    /** Warm-up and timed iterations per size, as the peer script chooses them. */
    static int[] iterations(long bytes) {
        if (bytes <= Sizes.MIB) {
            return new int[] {20, 200};
        }
        if (bytes <= 16 * Sizes.MIB) {
            return new int[] {5, 30};
        }
        if (bytes <= 64 * Sizes.MIB) {
            return new int[] {3, 12};
        }
        return new int[] {2, 7};
    }

    /**
     * Returns {median, min} over iterations of the slowest rank's time, in seconds, after
     * {@code warm} untimed calls and then more until {@link WarmUp} says they stopped getting
     * faster or {@code warmNanos} have passed.
     */
    static double[] timed(ProcessGroup group, Runnable op, int warm, long warmNanos, int iters, Runnable after) {
        WarmUp warmUp = new WarmUp(warmNanos);
        double[] more = {1};
        for (int i = 0; i < warm || more[0] > 0; i++) {
            op.run();
            if (after != null) {
                after.run();
            }
            if (i >= warm - 1 && (i - warm + 1) % 8 == 0) {
                // Rank 0 decides for everyone, so every rank makes the same calls.
                more[0] = group.rank() == 0 && warmUp.goOn(8) ? 1 : 0;
                group.allreduce(DenseBuffer.of(more), ReduceOp.MAX).await();
            }
        }
        double[] times = new double[iters];
        for (int i = 0; i < iters; i++) {
            group.barrier().await();
            long t0 = System.nanoTime();
            op.run();
            times[i] = (System.nanoTime() - t0) / 1e9;
            if (after != null) {
                after.run();
            }
        }
        group.allreduce(DenseBuffer.of(times), ReduceOp.MAX).await();
        double[] sorted = times.clone();
        Arrays.sort(sorted);
        double median = iters % 2 == 1 ? sorted[iters / 2] : (sorted[iters / 2 - 1] + sorted[iters / 2]) / 2;
        return new double[] {median, sorted[0]};
    }

    /**
     * When to stop warming up: the calls are counted in windows of at least {@link #WINDOW_NS};
     * after at least {@link #MIN_NS}, warm-up ends once {@link #SETTLED_WINDOWS} windows in a row
     * were not 3 % faster per call than the best before them, or at the budget. (Compilations
     * land one after another, and a plateau of a few hundred milliseconds can come before the
     * last large drop, so a shorter warm-up leaves some runs far from the steady state.)
     */
    static final class WarmUp {
        static final long MIN_NS = 3_000_000_000L;
        static final long WINDOW_NS = 100_000_000;
        static final int SETTLED_WINDOWS = 5;
        private final long started = System.nanoTime();
        private final long budgetNanos;
        private long windowStart = started;
        private long windowCalls;
        private double best = Double.MAX_VALUE;
        private int notBetter;
        private long compiledAt = compilationMillis();

        WarmUp(long budgetNanos) {
            this.budgetNanos = budgetNanos;
        }

        /** Counts {@code calls} more; returns whether to go on. */
        boolean goOn(int calls) {
            long now = System.nanoTime();
            windowCalls += calls;
            if (now - started >= budgetNanos) {
                return false;
            }
            if (now - windowStart < WINDOW_NS) {
                return true;
            }
            double perCall = (double) (now - windowStart) / windowCalls;
            long compiling = compilationMillis();
            boolean compiled = compiling != compiledAt;
            compiledAt = compiling;
            if (perCall < best * 0.97 || compiled) {
                best = perCall;
                notBetter = 0;
            } else {
                notBetter++;
            }
            windowStart = now;
            windowCalls = 0;
            return notBetter < SETTLED_WINDOWS || now - started < MIN_NS;
        }
    }

    /** The JIT compilers' time so far (ms), or 0 where the JVM does not say. */
    static long compilationMillis() {
        java.lang.management.CompilationMXBean jit = java.lang.management.ManagementFactory.getCompilationMXBean();
        return jit != null && jit.isCompilationTimeMonitoringSupported() ? jit.getTotalCompilationTime() : 0;
    }

    private static void fill(DenseBuffer data) {
        FloatBuffer f = (FloatBuffer) data.view();
        java.util.Random random = new java.util.Random(42);
        for (int i = 0; i < f.limit(); i++) {
            f.put(i, random.nextFloat());
        }
    }

    private static void scale(DenseBuffer data, float factor) {
        FloatBuffer f = (FloatBuffer) data.view();
        for (int i = 0; i < f.limit(); i++) {
            f.put(i, f.get(i) * factor);
        }
    }

    private static String join(List<Long> sizes) {
        StringBuilder s = new StringBuilder();
        for (long b : sizes) {
            s.append(s.length() == 0 ? "" : ",").append(b);
        }
        return s.toString();
    }
}
