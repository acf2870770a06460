package dev.cohort.shm.kernels;

import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.HalfFloats;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.runtime.DoubleFolds;
import dev.cohort.runtime.FloatFolds;
import dev.cohort.runtime.IntFolds;
import dev.cohort.runtime.LongFolds;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.function.IntFunction;

/**
 * Element-wise reductions over the ranks' operands: small Vector API kernels for the two-rank
 * float32 SUM, the common case, in a JVM that has the incubating module ({@link #VECTOR_API}), and
 * plain loops over arrays for everything else (that case too, without the module). The choice was
 * measured, the Vector API loops against plain loops in the same JVM (engines/shm's
 * ReduceKernelsBench, docs/lab/PERFORMANCE-LOG.md): the two-rank float32 SUM kernels were about
 * as fast on small operands and faster on large ones, so they stayed; the loops for the other
 * reductions were slower than plain loops at most sizes, and C2 often compiled them without the
 * Vector API intrinsics (boxing every vector), so they went.
 *
 * <p>The words are those of {@link ReduceArgs}. Operands are folded in rank order 0, 1, ..., n-1,
 * so the result does not depend on which rank computes it. AVG sums and then divides by
 * {@code n} (truncating for integers), on the rank that reduces, so every rank copies the same
 * bits. Every operation is done in the element's own type (float32 rounds to float after each),
 * but for the 16-bit floats, which are computed in float32 over all operands and rounded to 16
 * bits once; MIN and MAX follow {@link Math#min}/{@link Math#max} (NaN wins, -0.0 is below 0.0).
 *
 * <p>Shape: one dispatcher and two paths, the two-rank float32 SUM's kernels and the general path:
 * chunks staged through arrays and folded by plain loops, one per type and op (see below).
 */
public final class ReduceKernels {

    private static final ByteOrder NO = ByteOrder.nativeOrder();
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED;
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED;

    /**
     * Whether this JVM has the incubating Vector API ({@code --add-modules jdk.incubator.vector}) and
     * C2 to compile it: the two-rank float32 SUM then runs on {@link VectorKernels}, else on the
     * general path. Without C2 ({@code -Xint}, {@code -XX:TieredStopAtLevel=1..3}) vector operations
     * stay objects, many times slower than the plain loops.
     */
    public static final boolean VECTOR_API =
            ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent() && compilesWithC2();
    /** The general path's chunk: one staging array's size (two of them stay in the first-level cache). */
    static final int CHUNK_BYTES = 8 << 10;

    private ReduceKernels() {}

    /** Whether HotSpot's optimizing compiler runs here (true where that cannot be read: another VM). */
    static boolean compilesWithC2() {
        if (System.getProperty("java.vm.info", "").contains("interpreted mode")) {
            return false;
        }
        try {
            var vm = java.lang.management.ManagementFactory.getPlatformMXBean(
                    com.sun.management.HotSpotDiagnosticMXBean.class);
            boolean tiered =
                    Boolean.parseBoolean(vm.getVMOption("TieredCompilation").getValue());
            return !tiered
                    || Integer.parseInt(vm.getVMOption("TieredStopAtLevel").getValue()) >= 4;
        } catch (RuntimeException | LinkageError e) {
            return true;
        }
    }

    /** Reduces as {@code a} says (see {@link ReduceArgs}); allocates nothing. */
    public static void reduce(ReduceArgs a) {
        boolean avg = a.op == ReduceOp.AVG && a.ranks > 1;
        if (VECTOR_API
                && a.ranks == 2
                && (a.op == ReduceOp.SUM || a.op == ReduceOp.AVG)
                && a.type == DataType.FLOAT32
                && a.resultCount <= 1) {
            // AVG of two: (own + peer) * 0.5, the same bits as (own + peer) / 2 (both exact scalings)
            float scale = a.op == ReduceOp.AVG ? 0.5f : 1f;
            long resultOff = a.resultCount == 1 ? a.results[0] : -1;
            MemorySegment shm = a.shm;
            if (a.own == shm && a.out == shm && resultOff >= 0) {
                VectorKernels.sumTwoFloatsInPlace(
                        shm, a.ownOffset, a.terms[1 - a.self], a.count, a.outOffset, resultOff, scale);
                return;
            }
            if (a.own.isNative() && a.out.isNative() && a.own != shm) {
                VectorKernels.sumTwoFloats(
                        a.own, a.ownOffset, shm, a.terms[1 - a.self], a.count, a.out, a.outOffset, resultOff, scale);
                return;
            }
        }
        if (a.type.isHalfPrecision()) {
            halves(a, avg);
            return;
        }
        staged(a, lanes(a.type), avg);
    }

    /** The general path alone, the two-rank float32 SUM too: what ReduceKernelsBench times against its kernels. */
    static void reduceStaged(ReduceArgs a) {
        staged(a, lanes(a.type), a.op == ReduceOp.AVG && a.ranks > 1);
    }

    /** 16-bit floats: each chunk of every operand widened to float32, folded, rounded once. */
    private static void halves(ReduceArgs a, boolean avg) {
        int chunk = CHUNK_BYTES / 4;
        float[] acc = a.staging(0, float[]::new, chunk);
        float[] t = a.staging(1, float[]::new, chunk);
        short[] bits = a.staging(2, short[]::new, chunk);
        boolean bf16 = a.type == DataType.BFLOAT16;
        int n = a.ranks;
        for (long s = 0; s < a.count; s += chunk) {
            int len = (int) Math.min(chunk, a.count - s);
            long b = s * 2;
            load(a, 0, I16, b, bits, len);
            widen(bits, acc, len, bf16);
            for (int j = 1; j < n; j++) {
                load(a, j, I16, b, bits, len);
                widen(bits, t, len, bf16);
                FloatFolds.fold(a.op, acc, t, len);
            }
            if (avg) {
                FloatFolds.divide(acc, n, len);
            }
            if (bf16) {
                for (int i = 0; i < len; i++) bits[i] = HalfFloats.floatToBf16(acc[i]);
            } else {
                for (int i = 0; i < len; i++) bits[i] = Float.floatToFloat16(acc[i]); // the JDK's intrinsic
            }
            MemorySegment.copy(bits, 0, a.out, I16, a.outOffset + b, len);
            for (int r = 0; r < a.resultCount; r++) {
                MemorySegment.copy(bits, 0, a.shm, I16, a.results[r] + b, len);
            }
        }
    }

    private static void widen(short[] bits, float[] to, int len, boolean bf16) {
        if (bf16) {
            for (int i = 0; i < len; i++) to[i] = Float.intBitsToFloat((bits[i] & 0xFFFF) << 16);
        } else {
            for (int i = 0; i < len; i++) to[i] = Float.float16ToFloat(bits[i]);
        }
    }

    /**
     * Runs the float32 kernels on scratch memory until C2 has compiled them, or until
     * {@code budgetNanos} have passed; returns whether they got there. Until C2 compiles a Vector
     * API loop it runs one to two orders of magnitude slower than the loop it replaces, and on a
     * pinned core the compiler thread only gets the CPU
     * while the rank is not spinning in a barrier: in a benchmark of 2 pinned ranks, 2,000 calls
     * were not enough. Here, before the group's first call, nothing spins. Each kernel is called
     * with the kinds of segment it will meet, and only those: a kernel that has seen both a
     * mapping's segment and a direct buffer's in one place was compiled without the intrinsics,
     * boxing every vector (allocating on every call and several times slower; docs/lab/PERFORMANCE-LOG.md).
     *
     * @param shm the group's mapping; {@code [scratch, scratch + 3 KiB)} is this rank's to use
     */
    public static boolean compileFloatKernels(MemorySegment shm, long scratch, int n, long budgetNanos) {
        int count = 256;
        long bytes = count * 4L;
        MemorySegment direct = MemorySegment.ofBuffer(ByteBuffer.allocateDirect((int) bytes * 2));
        int ranks = Math.max(2, n);
        ReduceArgs a = new ReduceArgs(ranks)
                .op(DataType.FLOAT32, ReduceOp.SUM)
                .shm(shm)
                .count(count);
        for (int j = 0; j < ranks; j++) {
            a.term(j, scratch);
        }
        long deadline = System.nanoTime() + budgetNanos;
        while (true) {
            for (int i = 0; i < 64; i++) {
                runFloatKernels(a, direct, shm, scratch, bytes, count);
            }
            long t0 = System.nanoTime();
            runFloatKernels(a, direct, shm, scratch, bytes, count);
            long took = System.nanoTime() - t0;
            if (took < 4_000) { // 7 kernel calls over 1 KiB each: compiled, they take well under 1 us
                return true;
            }
            if (t0 - deadline > 0) {
                return false;
            }
        }
    }

    private static void runFloatKernels(
            ReduceArgs a, MemorySegment direct, MemorySegment shm, long scratch, long bytes, int count) {
        if (VECTOR_API) {
            VectorKernels.sumTwoFloats(direct, 0, shm, scratch, count, direct, bytes, -1, 1f);
            VectorKernels.sumTwoFloats(direct, 0, shm, scratch, count, direct, bytes, scratch + bytes, 0.5f);
            VectorKernels.sumTwoFloatsInPlace(
                    shm, scratch + bytes, scratch, count, scratch + bytes, scratch + 2 * bytes, 1f);
        }
        int n = a.terms.length;
        staged(a.ranks(n, 0).own(direct, 0).out(direct, bytes).noResults(), FLOAT32, false);
        staged(a.addResult(scratch + bytes), FLOAT32, false);
        staged(a.ranks(n, 1).own(shm, scratch).out(shm, scratch + 2 * bytes).noResults(), FLOAT32, false);
        staged(a.addResult(scratch + bytes), FLOAT32, true);
    }

    /*
     * The general path, a chunk of CHUNK_BYTES at a time. Each operand's chunk, in rank order, is
     * copied into an array (MemorySegment.copy takes any kind of segment) and folded into the
     * accumulator's array by a plain counted loop, chosen before the chunks.
     * The accumulator's chunk is then copied to out and to every result, after every operand's
     * chunk has been read: so out may be the own operand and the results the terms, as in an
     * allreduce in place. Why arrays: a plain loop over two segments stays scalar (JDK 25's C2
     * cannot rule out that they overlap, and has no run-time check for it), and one whose accesses
     * have met more than one kind of segment (a direct buffer's, a heap buffer's, the mapping's)
     * was several times slower still; over two arrays C2 vectorizes it, and only the copies, which
     * take any segment, see the segments. What the staging costs shows on operands larger than the
     * caches, where one copy streams at a time (docs/lab/PERFORMANCE-LOG.md).
     */

    /** One element type's layout, staging arrays and loops (runtime's folds); the arrays are each ReduceArgs' own. */
    private record Lanes<A>(ValueLayout layout, IntFunction<A> arrays, Fold<A> fold, Divide<A> divide) {}

    /** {@code acc[i] = op(acc[i], t[i])} for i in [0, n); AVG as SUM. */
    @FunctionalInterface
    private interface Fold<A> {
        void apply(ReduceOp op, A acc, A t, int n);
    }

    /** {@code acc[i] = acc[i] / d} for i in [0, n), truncating for integers. */
    @FunctionalInterface
    private interface Divide<A> {
        void apply(A acc, int d, int n);
    }

    private static final Lanes<float[]> FLOAT32 = new Lanes<>(F32, float[]::new, FloatFolds::fold, FloatFolds::divide);
    private static final Lanes<double[]> FLOAT64 =
            new Lanes<>(F64, double[]::new, DoubleFolds::fold, DoubleFolds::divide);
    private static final Lanes<int[]> INT32 = new Lanes<>(I32, int[]::new, IntFolds::fold, IntFolds::divide);
    private static final Lanes<long[]> INT64 = new Lanes<>(I64, long[]::new, LongFolds::fold, LongFolds::divide);

    private static Lanes<?> lanes(DataType type) {
        return switch (type) {
            case FLOAT32 -> FLOAT32;
            case FLOAT64 -> FLOAT64;
            case INT32 -> INT32;
            case INT64 -> INT64;
            case FLOAT16, BFLOAT16 -> throw new IllegalArgumentException("16-bit floats take their own path");
        };
    }

    private static <A> void staged(ReduceArgs a, Lanes<A> lanes, boolean avg) {
        int e = a.type.byteSize();
        int chunk = CHUNK_BYTES / e;
        A acc = a.staging(0, lanes.arrays(), chunk);
        A t = a.staging(1, lanes.arrays(), chunk);
        ValueLayout layout = lanes.layout();
        int n = a.ranks;
        for (long s = 0; s < a.count; s += chunk) {
            int len = (int) Math.min(chunk, a.count - s);
            long b = s * e;
            load(a, 0, layout, b, acc, len);
            for (int j = 1; j < n; j++) {
                load(a, j, layout, b, t, len);
                lanes.fold().apply(a.op, acc, t, len);
            }
            if (avg) {
                lanes.divide().apply(acc, n, len);
            }
            MemorySegment.copy(acc, 0, a.out, layout, a.outOffset + b, len);
            for (int r = 0; r < a.resultCount; r++) {
                MemorySegment.copy(acc, 0, a.shm, layout, a.results[r] + b, len);
            }
        }
    }

    /** Operand j's {@code len} elements from byte {@code b} on into {@code array}. */
    private static void load(ReduceArgs a, int j, ValueLayout layout, long b, Object array, int len) {
        if (j == a.self) {
            MemorySegment.copy(a.own, layout, a.ownOffset + b, array, 0, len);
        } else {
            MemorySegment.copy(a.shm, layout, a.terms[j] + b, array, 0, len);
        }
    }
}
