package dev.cohort.shm.kernels;

import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.ReduceOp;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongUnaryOperator;

/**
 * {@link ReduceKernels#reduce} against plain loops, and against the kernels of another build, in one JVM, case by
 * case and round by round: the measurement behind the choice of loops in ReduceKernels (see its class comment and
 * docs/lab/PERFORMANCE-LOG.md). Not a test; {@code scripts/bench-kernels.sh} builds its class path and runs it.
 *
 * <p>A case: one element type, one op, {@code ranks} operands of {@code bytes} each, laid out as the shm engine's
 * copying allreduce lays them out: this rank's operand (rank 0's) in a direct buffer that also takes the result (the
 * engine reduces into the caller's buffer in place), the other ranks' in a mapping of a /dev/shm file, and one copy
 * of the result into the mapping (where the other ranks would copy it from). The variants:
 * <ul>
 *   <li>{@code kernel}: {@code ReduceKernels.reduce}, the build on the class path;</li>
 *   <li>{@code base}: the same from the classes in {@code --baseline DIR} (another commit's build), loaded by a class
 *       loader of its own, so that the two builds' methods are profiled and compiled apart;</li>
 *   <li>{@code staged}: ReduceKernels' general path alone (plain loops over chunks staged through arrays), the
 *       two-rank float32 SUM too, which {@code reduce} gives to its Vector API kernels (elsewhere it runs what
 *       {@code kernel} runs, entered apart: the two show the sitting's noise);</li>
 *   <li>{@code plain}: plain loops over the segments, one counted int loop per type and op with nothing else in it
 *       (the form C2's auto-vectorizer takes), applied rank by rank, then {@code MemorySegment.copy} for the
 *       result's copy.</li>
 * </ul>
 *
 * <p>A sample is the mean time of a call over a batch of calls that takes about {@link #SAMPLE_NS} (at least 3
 * calls). Every round visits every case, and each case's variants in an order that rotates from round to round. The
 * summary gives each variant's median and minimum over rounds, and each ratio as the median over rounds of that
 * round's ratio and as the ratio of the minimums (on a machine shared with other work, the minimum is the sample
 * least disturbed).
 * Before timing, every variant's result is checked against the kernel's, bit for bit, at the smallest size.
 */
public final class ReduceKernelsBench {

    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfDouble D = ValueLayout.JAVA_DOUBLE_UNALIGNED;
    private static final ValueLayout.OfInt I = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfLong L = ValueLayout.JAVA_LONG_UNALIGNED;
    static final long SAMPLE_NS = 2_000_000;
    /** The scratch that {@code compileFloatKernels} may use, past the operands in the mapping. */
    private static final long SCRATCH = 4 << 10;
    /** Every case and variant runs this long, in each of the warm-up passes, before any is timed. */
    private static final long WARM_NS = 40_000_000;

    private static final int WARM_PASSES = 3;

    private ReduceKernelsBench() {}

    /** x[i] = x[i] op y[i] for i in [0, n), over whole segments. */
    @FunctionalInterface
    interface Pass {
        void run(MemorySegment x, MemorySegment y, int n);
    }

    /** One loop per type and op, each a lambda of its own, so that each is compiled (and vectorized, or not) apart. */
    static Pass pass(DataType type, ReduceOp op) {
        return switch (type + " " + op) {
            case "FLOAT32 SUM" ->
                (x, y, n) -> {
                    for (int i = 0; i < n; i++) x.setAtIndex(F, i, x.getAtIndex(F, i) + y.getAtIndex(F, i));
                };
            case "FLOAT64 SUM" ->
                (x, y, n) -> {
                    for (int i = 0; i < n; i++) x.setAtIndex(D, i, x.getAtIndex(D, i) + y.getAtIndex(D, i));
                };
            case "INT32 SUM" ->
                (x, y, n) -> {
                    for (int i = 0; i < n; i++) x.setAtIndex(I, i, x.getAtIndex(I, i) + y.getAtIndex(I, i));
                };
            case "INT64 SUM" ->
                (x, y, n) -> {
                    for (int i = 0; i < n; i++) x.setAtIndex(L, i, x.getAtIndex(L, i) + y.getAtIndex(L, i));
                };
            case "FLOAT32 MAX" ->
                (x, y, n) -> {
                    for (int i = 0; i < n; i++) x.setAtIndex(F, i, Math.max(x.getAtIndex(F, i), y.getAtIndex(F, i)));
                };
            case "FLOAT64 MAX" ->
                (x, y, n) -> {
                    for (int i = 0; i < n; i++) x.setAtIndex(D, i, Math.max(x.getAtIndex(D, i), y.getAtIndex(D, i)));
                };
            case "INT32 MAX" ->
                (x, y, n) -> {
                    for (int i = 0; i < n; i++) x.setAtIndex(I, i, Math.max(x.getAtIndex(I, i), y.getAtIndex(I, i)));
                };
            case "INT64 MAX" ->
                (x, y, n) -> {
                    for (int i = 0; i < n; i++) x.setAtIndex(L, i, Math.max(x.getAtIndex(L, i), y.getAtIndex(L, i)));
                };
            default ->
                throw new IllegalArgumentException("no plain loop for " + type + " " + op + " (SUM and MAX only)");
        };
    }

    /**
     * {@code reps} calls of {@code ReduceKernels.reduce} over one case, or of its general path alone
     * ({@code staged}, which the baseline need not have); public for the baseline's class loader.
     */
    public static final class KernelRun implements LongUnaryOperator {
        private final ReduceArgs args;
        private final boolean staged;

        public KernelRun(
                boolean staged,
                DataType type,
                ReduceOp op,
                int ranks,
                long count,
                MemorySegment own,
                MemorySegment shm,
                long[] terms,
                long result) {
            this.staged = staged;
            args = new ReduceArgs(ranks)
                    .ranks(ranks, 0)
                    .op(type, op)
                    .own(own, 0)
                    .shm(shm)
                    .count(count)
                    .out(own, 0)
                    .noResults()
                    .addResult(result);
            for (int j = 1; j < ranks; j++) {
                args.term(j, terms[j]);
            }
        }

        /** What the engine does once per JVM before its first group's first call: the float32 kernels, compiled. */
        public static boolean compile(MemorySegment shm, long scratch, int ranks) {
            return ReduceKernels.compileFloatKernels(shm, scratch, ranks, 2_000_000_000L);
        }

        @Override
        public long applyAsLong(long reps) {
            long t0 = System.nanoTime();
            for (long r = 0; r < reps; r++) {
                if (staged) {
                    ReduceKernels.reduceStaged(args);
                } else {
                    ReduceKernels.reduce(args);
                }
            }
            return System.nanoTime() - t0;
        }
    }

    /** {@code reps} times: the plain pass with every other rank's operand in turn, then the result's copy. */
    static final class PlainRun implements LongUnaryOperator {
        private final Pass pass;
        private final MemorySegment own;
        private final MemorySegment[] peers;
        private final MemorySegment result;
        private final int count;

        PlainRun(
                DataType type,
                ReduceOp op,
                int ranks,
                long count,
                MemorySegment own,
                MemorySegment shm,
                long[] terms,
                long result) {
            long bytes = count * type.byteSize();
            this.pass = pass(type, op);
            this.own = own.asSlice(0, bytes);
            this.peers = new MemorySegment[ranks - 1];
            for (int j = 1; j < ranks; j++) {
                peers[j - 1] = shm.asSlice(terms[j], bytes);
            }
            this.result = shm.asSlice(result, bytes);
            this.count = Math.toIntExact(count);
        }

        @Override
        public long applyAsLong(long reps) {
            long t0 = System.nanoTime();
            for (long r = 0; r < reps; r++) {
                for (MemorySegment peer : peers) {
                    pass.run(own, peer, count);
                }
                MemorySegment.copy(own, 0, result, 0, own.byteSize());
            }
            return System.nanoTime() - t0;
        }
    }

    /** One case's variants, their batch sizes and samples. */
    private record Case(
            Operands at,
            ReduceOp op,
            int ranks,
            long bytes,
            Map<String, LongUnaryOperator> runs,
            Map<String, Long> reps,
            Map<String, List<Double>> samples) {
        DataType type() {
            return at.type();
        }

        String name() {
            return type() + " " + op + " " + ranks + " ranks " + size(bytes);
        }
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> opt = options(args);
        int rounds = Integer.parseInt(opt.getOrDefault("rounds", "15"));
        long[] sizes = Arrays.stream(opt.getOrDefault("sizes", "4K,64K,1M,16M").split(","))
                .mapToLong(ReduceKernelsBench::bytes)
                .toArray();
        int[] rankCounts = Arrays.stream(opt.getOrDefault("ranks", "2,4").split(","))
                .mapToInt(Integer::parseInt)
                .toArray();
        String[] types =
                opt.getOrDefault("types", "FLOAT32,FLOAT64,INT32,INT64").split(",");
        String[] ops = opt.getOrDefault("ops", "SUM,MAX").split(",");
        String[] variants = opt.getOrDefault(
                        "variants", opt.containsKey("baseline") ? "kernel,base,staged,plain" : "kernel,staged,plain")
                .split(",");
        ClassLoader base = opt.containsKey("baseline") ? baselineLoader(Path.of(opt.get("baseline"))) : null;
        long maxBytes = Arrays.stream(sizes).max().orElseThrow();
        int maxRanks = Arrays.stream(rankCounts).max().orElseThrow();

        Path file = Files.createTempFile(Path.of("/dev/shm"), "cohort-kernels-bench", "");
        try (Arena arena = Arena.ofShared();
                FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            long span = (maxRanks + 1) * maxBytes; // one type's operands and result copy in the mapping
            MemorySegment mapping = ch.map(FileChannel.MapMode.READ_WRITE, 0, types.length * span + SCRATCH, arena);
            compile(variants, base, mapping, types.length * span, maxRanks);
            List<Case> cases = new ArrayList<>();
            for (int k = 0; k < types.length; k++) {
                DataType type = DataType.valueOf(types[k]);
                MemorySegment own = MemorySegment.ofBuffer(ByteBuffer.allocateDirect(Math.toIntExact(maxBytes)));
                Operands at = new Operands(type, maxRanks, maxBytes, own, mapping.asSlice(k * span, span));
                for (String o : ops) {
                    for (int n : rankCounts) {
                        for (long bytes : sizes) {
                            Map<String, LongUnaryOperator> runs = new LinkedHashMap<>();
                            for (String v : variants) {
                                runs.put(v, run(v, base, ReduceOp.valueOf(o), n, bytes, at));
                            }
                            cases.add(new Case(
                                    at,
                                    ReduceOp.valueOf(o),
                                    n,
                                    bytes,
                                    runs,
                                    new LinkedHashMap<>(),
                                    new LinkedHashMap<>()));
                        }
                    }
                }
            }
            check(cases, sizes[0]);
            for (int pass = 0; pass < WARM_PASSES; pass++) {
                for (Case c : cases) {
                    c.at().fill();
                    c.runs().values().forEach(run -> warm(run, WARM_NS));
                }
            }
            for (Case c : cases) {
                for (var v : c.runs().entrySet()) {
                    c.reps().put(v.getKey(), calibrate(v.getValue()));
                    c.samples().put(v.getKey(), new ArrayList<>());
                }
            }
            for (int r = 0; r < rounds; r++) {
                for (Case c : cases) {
                    List<String> order = new ArrayList<>(c.runs().keySet());
                    for (int k = 0; k < order.size(); k++) {
                        String v = order.get((k + r) % order.size());
                        long reps = c.reps().get(v);
                        c.samples().get(v).add(c.runs().get(v).applyAsLong(reps) / (double) reps);
                    }
                }
                System.err.println("round " + (r + 1) + " of " + rounds + " done");
            }
            report(cases, variants, opt.get("out"));
        } finally {
            Files.deleteIfExists(file);
        }
    }

    /**
     * One type's memory: rank 0's operand in {@code own}; rank j's at {@code j * maxBytes} of {@code shm}, the result
     * copy at {@code ranks * maxBytes}.
     */
    record Operands(DataType type, int maxRanks, long maxBytes, MemorySegment own, MemorySegment shm) {
        long[] terms(int ranks) {
            long[] terms = new long[ranks];
            for (int j = 1; j < ranks; j++) {
                terms[j] = j * maxBytes;
            }
            return terms;
        }

        /** Small values in the element type: sums stay exact for long, nothing overflows soon, no subnormals. */
        void fill() {
            int e = type.byteSize();
            for (int j = 0; j < maxRanks; j++) {
                MemorySegment m = j == 0 ? own : shm.asSlice(j * maxBytes, maxBytes);
                for (long i = 0; i < maxBytes / e; i++) {
                    long v = (i * 2654435761L + j * 97L) % 13 - 6;
                    switch (type) {
                        case FLOAT32 -> m.setAtIndex(F, i, v * 0.25f);
                        case FLOAT64 -> m.setAtIndex(D, i, v * 0.25);
                        case INT32 -> m.setAtIndex(I, i, (int) v);
                        case INT64 -> m.setAtIndex(L, i, v);
                    }
                }
            }
        }
    }

    /** {@link KernelRun#compile} for the builds that will be timed, as every engine JVM runs it. */
    private static void compile(String[] variants, ClassLoader base, MemorySegment shm, long scratch, int ranks)
            throws ReflectiveOperationException {
        for (String v : variants) {
            boolean done = switch (v) {
                case "kernel" -> KernelRun.compile(shm, scratch, ranks);
                case "base" ->
                    (Boolean) base.loadClass(KernelRun.class.getName())
                            .getMethod("compile", MemorySegment.class, long.class, int.class)
                            .invoke(null, shm, scratch, ranks);
                default -> true;
            };
            if (!v.equals("staged") && !v.equals("plain")) {
                System.err.println(
                        v + (done ? ": float32 kernels compiled" : ": float32 kernels not compiled within 2 s"));
            }
        }
    }

    private static LongUnaryOperator run(String variant, ClassLoader base, ReduceOp op, int n, long bytes, Operands at)
            throws ReflectiveOperationException {
        long count = bytes / at.type().byteSize();
        long[] terms = at.terms(n);
        long result = n * at.maxBytes();
        return switch (variant) {
            case "kernel" -> new KernelRun(false, at.type(), op, n, count, at.own(), at.shm(), terms, result);
            case "staged" -> new KernelRun(true, at.type(), op, n, count, at.own(), at.shm(), terms, result);
            case "plain" -> new PlainRun(at.type(), op, n, count, at.own(), at.shm(), terms, result);
            case "base" ->
                (LongUnaryOperator) base.loadClass(KernelRun.class.getName())
                        .getConstructor(
                                boolean.class,
                                DataType.class,
                                ReduceOp.class,
                                int.class,
                                long.class,
                                MemorySegment.class,
                                MemorySegment.class,
                                long[].class,
                                long.class)
                        .newInstance(false, at.type(), op, n, count, at.own(), at.shm(), terms, result);
            default -> throw new IllegalArgumentException("unknown variant " + variant);
        };
    }

    /**
     * The kernels' package from {@code dir} first (ReduceKernels and ReduceArgs of another build), then this class's
     * own folder (for {@link KernelRun}), everything else from the application's class loader.
     */
    private static ClassLoader baselineLoader(Path dir) throws IOException {
        URL mine =
                ReduceKernelsBench.class.getProtectionDomain().getCodeSource().getLocation();
        String pkg = ReduceKernelsBench.class.getPackageName() + ".";
        return new URLClassLoader(new URL[] {dir.toUri().toURL(), mine}, ReduceKernelsBench.class.getClassLoader()) {
            @Override
            protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
                if (!name.startsWith(pkg)) {
                    return super.loadClass(name, resolve);
                }
                synchronized (getClassLoadingLock(name)) {
                    Class<?> c = findLoadedClass(name);
                    return c != null ? c : findClass(name);
                }
            }
        };
    }

    /** Runs a variant for {@code ns} at least, twice at least, in batches that grow (so that C2 compiles it). */
    private static void warm(LongUnaryOperator run, long ns) {
        long spent = 0;
        for (long batch = 1; spent < ns || batch < 4; batch = Math.min(batch * 2, 1 << 12)) {
            spent += run.applyAsLong(batch);
        }
    }

    /** The calls that take about {@link #SAMPLE_NS}, 3 at least. */
    private static long calibrate(LongUnaryOperator run) {
        long took = run.applyAsLong(16);
        return Math.max(3, SAMPLE_NS * 16 / Math.max(1, took));
    }

    /** Every variant's result and result copy equal to the first variant's, bit for bit, at {@code bytes}. */
    private static void check(List<Case> cases, long bytes) {
        for (Case c : cases) {
            if (c.bytes() != bytes) {
                continue;
            }
            byte[] expected = null;
            for (var v : c.runs().entrySet()) {
                c.at().fill();
                v.getValue().applyAsLong(1);
                byte[] got = new byte[(int) (2 * bytes)];
                MemorySegment.copy(c.at().own(), ValueLayout.JAVA_BYTE, 0, got, 0, (int) bytes);
                long result = c.ranks() * c.at().maxBytes();
                MemorySegment.copy(c.at().shm(), ValueLayout.JAVA_BYTE, result, got, (int) bytes, (int) bytes);
                if (expected == null) {
                    expected = got;
                } else if (!Arrays.equals(expected, got)) {
                    throw new IllegalStateException(v.getKey() + " differs from "
                            + c.runs().keySet().iterator().next() + " in " + c.name());
                }
            }
        }
        System.err.println("every variant's results agree at " + size(bytes));
    }

    /**
     * A markdown table (each variant's median and minimum over rounds, in µs; each ratio to the first
     * variant as the median of the rounds' ratios and as the ratio of the minimums) and every sample
     * as tab-separated values.
     */
    private static void report(List<Case> cases, String[] variants, String out) throws IOException {
        StringBuilder md = new StringBuilder("| type | op | ranks | size |");
        StringBuilder sep = new StringBuilder("|---|---|---|---|");
        for (String v : variants) {
            md.append(' ').append(v).append(" µs median (min) |");
            sep.append("---|");
        }
        for (int k = 1; k < variants.length; k++) {
            md.append(' ').append(variants[k]).append(" / ").append(variants[0]).append(" median (of mins) |");
            sep.append("---|");
        }
        md.append('\n').append(sep).append('\n');
        StringBuilder tsv =
                new StringBuilder("type\top\tranks\tbytes\tvariant\treps\tmedian_ns\tmin_ns\tmax_ns\tsamples_ns\n");
        for (Case c : cases) {
            md.append(String.format("| %s | %s | %d | %s |", c.type(), c.op(), c.ranks(), size(c.bytes())));
            for (String v : variants) {
                List<Double> s = c.samples().get(v);
                md.append(String.format(" %.3f (%.3f) |", median(s) / 1e3, min(s) / 1e3));
                tsv.append(String.join(
                                "\t",
                                c.type().toString(),
                                c.op().toString(),
                                String.valueOf(c.ranks()),
                                String.valueOf(c.bytes()),
                                v,
                                String.valueOf(c.reps().get(v)),
                                String.format("%.1f", median(s)),
                                String.format("%.1f", min(s)),
                                String.format(
                                        "%.1f",
                                        s.stream().mapToDouble(x -> x).max().orElseThrow()),
                                String.join(
                                        ",",
                                        s.stream()
                                                .map(x -> String.format("%.1f", x))
                                                .toList())))
                        .append('\n');
            }
            List<Double> first = c.samples().get(variants[0]);
            for (int k = 1; k < variants.length; k++) {
                List<Double> s = c.samples().get(variants[k]);
                List<Double> ratios = new ArrayList<>();
                for (int r = 0; r < s.size(); r++) {
                    ratios.add(s.get(r) / first.get(r));
                }
                md.append(String.format(" %.2f (%.2f) |", median(ratios), min(s) / min(first)));
            }
            md.append('\n');
        }
        System.out.print(md);
        if (out != null) {
            Files.writeString(Path.of(out + ".md"), md);
            Files.writeString(Path.of(out + ".tsv"), tsv);
        }
    }

    private static double min(List<Double> values) {
        return values.stream().mapToDouble(Double::doubleValue).min().orElseThrow();
    }

    private static double median(List<Double> values) {
        double[] s = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    private static long bytes(String size) {
        String s = size.trim().toUpperCase();
        int shift = s.endsWith("K") ? 10 : s.endsWith("M") ? 20 : 0;
        return Long.parseLong(shift == 0 ? s : s.substring(0, s.length() - 1)) << shift;
    }

    private static String size(long bytes) {
        return bytes >= 1 << 20 ? (bytes >> 20) + " MiB" : (bytes >> 10) + " KiB";
    }

    private static Map<String, String> options(String[] args) {
        Map<String, String> opt = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i++) {
            if (!args[i].startsWith("--") || i + 1 == args.length) {
                throw new IllegalArgumentException(
                        "usage: ReduceKernelsBench [--rounds N] [--sizes 4K,64K,1M,16M] [--ranks 2,4]"
                                + " [--types FLOAT32,...] [--ops SUM,MAX] [--variants kernel,base,plain] [--baseline DIR] [--out PREFIX]");
            }
            opt.put(args[i].substring(2), args[++i]);
        }
        return opt;
    }
}
