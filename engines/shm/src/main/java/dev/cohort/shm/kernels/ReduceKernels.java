package dev.cohort.shm.kernels;

import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.ReduceOp;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * Element-wise reductions over the ranks' operands with the Vector API (plain loops over
 * {@code MemorySegment} were not vectorized in the prototype and ran 2-3x slower).
 *
 * <p>The words are those of {@link ReduceArgs}. Operands are folded in rank order 0, 1, ..., n-1,
 * so the result does not depend on which rank computes it. AVG sums and then divides by
 * {@code n} (truncating for integers), on the rank that reduces, so every rank copies the same
 * bits. MIN and MAX follow {@link Math#min}/{@link Math#max}, in the vectors as in the tails.
 *
 * <p>Shape: one dispatcher, one vector loop per element type (each type has its own species and
 * vector class, and a loop over the abstract {@code Vector<E>} shared by four types would be
 * megamorphic, so C2 would box every vector), and one scalar tail per kind of number for the
 * elements past the last whole vector: int32 and int64 in {@code long} (two's complement
 * arithmetic agrees in the low 32 bits; truncated before AVG divides), float32 and float64 in
 * {@code double} (a float32 result rounded back to float after every operation: for +, *, / of
 * two floats a double's 53 bits round to exactly the float result, so the bits are those of a
 * float loop). The two-rank float32 SUM, the common case, has its own small kernels (see below).
 */
public final class ReduceKernels {

    private static final ByteOrder NO = ByteOrder.nativeOrder();
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED;
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final int SUM = 0;
    private static final int PRODUCT = 1;
    private static final int MIN = 2;
    private static final int MAX = 3;

    private static final VectorSpecies<Float> FLOATS = FloatVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Double> DOUBLES = DoubleVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Integer> INTS = IntVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Long> LONGS = LongVector.SPECIES_PREFERRED;

    private ReduceKernels() {
    }

    /** Reduces as {@code a} says (see {@link ReduceArgs}); allocates nothing. */
    public static void reduce(ReduceArgs a) {
        int opc = switch (a.op) {
            case SUM, AVG -> SUM;
            case PRODUCT -> PRODUCT;
            case MIN -> MIN;
            case MAX -> MAX;
        };
        boolean avg = a.op == ReduceOp.AVG && a.ranks > 1;
        if (a.ranks == 2 && a.op == ReduceOp.SUM && a.type == DataType.FLOAT32 && a.resultCount <= 1) {
            long resultOff = a.resultCount == 1 ? a.results[0] : -1;
            MemorySegment shm = a.shm;
            if (a.own == shm && a.out == shm && resultOff >= 0) {
                sumTwoFloatsInPlace(shm, a.ownOffset, a.terms[1 - a.self], a.count, a.outOffset, resultOff);
                return;
            }
            if (a.own.isNative() && a.out.isNative() && a.own != shm) {
                sumTwoFloats(a.own, a.ownOffset, shm, a.terms[1 - a.self], a.count, a.out, a.outOffset, resultOff);
                return;
            }
        }
        long done = switch (a.type) {
            case FLOAT32 -> floats(a, opc, avg);
            case FLOAT64 -> doubles(a, opc, avg);
            case INT32 -> ints(a, opc, avg);
            case INT64 -> longs(a, opc, avg);
        };
        if (done < a.count) {
            if (a.type == DataType.FLOAT32 || a.type == DataType.FLOAT64) {
                floatingTail(a, opc, avg, done);
            } else {
                integralTail(a, opc, avg, done);
            }
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
        ReduceArgs a = new ReduceArgs(ranks).op(DataType.FLOAT32, ReduceOp.SUM).shm(shm).count(count);
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
            if (took < 4_000) {   // 8 kernel calls over 1 KiB each: compiled, they take well under 1 us
                return true;
            }
            if (t0 - deadline > 0) {
                return false;
            }
        }
    }

    private static void runFloatKernels(ReduceArgs a, MemorySegment direct, MemorySegment shm, long scratch,
                                        long bytes, int count) {
        sumTwoFloats(direct, 0, shm, scratch, count, direct, bytes, -1);
        sumTwoFloats(direct, 0, shm, scratch, count, direct, bytes, scratch + bytes);
        sumTwoFloatsInPlace(shm, scratch + bytes, scratch, count, scratch + bytes, scratch + 2 * bytes);
        int n = a.terms.length;
        floats(a.ranks(n, 0).own(direct, 0).out(direct, bytes).noResults(), SUM, false);
        floats(a.addResult(scratch + bytes), SUM, false);
        floats(a.ranks(n, 1).own(shm, scratch).out(shm, scratch + 2 * bytes).noResults(), SUM, false);
        floats(a.addResult(scratch + bytes), SUM, true);
    }

    /*
     * The common case, float32 SUM over two ranks: own + peer. IEEE addition is commutative, so
     * both ranks get the same bits whichever operand is their own. Each variant is its own small
     * method with one loop and no branch inside: C2 compiles only the branches a method has taken,
     * and a branch taken later (the result copy that the pipelined path needs and the small path
     * does not, say) deoptimizes the method back to the interpreter, where Vector API operations
     * run about 100x slower until C2 compiles it again. About 3x faster than the general loop at
     * 4 KiB.
     */

    /**
     * An allreduce in place: the operands and the results all lie in one segment (the arenas). Its
     * own copy of the loop, so that the copying paths' segments (a direct buffer's and the
     * mapping's) never meet these in one compiled loop (see {@link #compileFloatKernels}).
     */
    private static void sumTwoFloatsInPlace(MemorySegment m, long own, long peer, long count, long out, long result) {
        long upper = FLOATS.loopBound(count);
        for (long b = 0, end = upper * 4; b < end; b += FLOATS.vectorByteSize()) {
            FloatVector sum = FloatVector.fromMemorySegment(FLOATS, m, own + b, NO)
                    .add(FloatVector.fromMemorySegment(FLOATS, m, peer + b, NO));
            sum.intoMemorySegment(m, out + b, NO);
            sum.intoMemorySegment(m, result + b, NO);
        }
        if (upper < count) {
            sumTwoFloatsTail(m, own, m, peer, upper, count, m, out, result);
        }
    }

    /** Copying paths: {@code own} and {@code out} are the caller's direct buffer, {@code shm} the mapping. */
    private static void sumTwoFloats(MemorySegment own, long ownOff, MemorySegment shm, long peer, long count,
                                     MemorySegment out, long outOff, long resultOff) {
        long vectors = FLOATS.loopBound(count);
        if (resultOff >= 0) {
            sumTwoFloatsTwice(own, ownOff, shm, peer, vectors, out, outOff, resultOff);
        } else {
            sumTwoFloatsOnce(own, ownOff, shm, peer, vectors, out, outOff);
        }
        if (vectors < count) {
            sumTwoFloatsTail(own, ownOff, shm, peer, vectors, count, out, outOff, resultOff);
        }
    }

    private static void sumTwoFloatsOnce(MemorySegment own, long ownOff, MemorySegment shm, long peer, long upper,
                                         MemorySegment out, long outOff) {
        for (long b = 0, end = upper * 4; b < end; b += FLOATS.vectorByteSize()) {
            FloatVector.fromMemorySegment(FLOATS, own, ownOff + b, NO)
                    .add(FloatVector.fromMemorySegment(FLOATS, shm, peer + b, NO))
                    .intoMemorySegment(out, outOff + b, NO);
        }
    }

    private static void sumTwoFloatsTwice(MemorySegment own, long ownOff, MemorySegment shm, long peer, long upper,
                                          MemorySegment out, long outOff, long resultOff) {
        for (long b = 0, end = upper * 4; b < end; b += FLOATS.vectorByteSize()) {
            FloatVector sum = FloatVector.fromMemorySegment(FLOATS, own, ownOff + b, NO)
                    .add(FloatVector.fromMemorySegment(FLOATS, shm, peer + b, NO));
            sum.intoMemorySegment(out, outOff + b, NO);
            sum.intoMemorySegment(shm, resultOff + b, NO);
        }
    }

    private static void sumTwoFloatsTail(MemorySegment own, long ownOff, MemorySegment shm, long peer, long from,
                                         long count, MemorySegment out, long outOff, long resultOff) {
        for (long i = from; i < count; i++) {
            long b = i * 4L;
            float sum = own.get(F32, ownOff + b) + shm.get(F32, peer + b);
            out.set(F32, outOff + b, sum);
            if (resultOff >= 0) {
                shm.set(F32, resultOff + b, sum);
            }
        }
    }

    /*
     * The general vector loops, one per type; each returns how many elements it reduced (the whole
     * vectors). The flyweight's fields are read into locals first: stores into native memory may
     * alias any heap field as far as C2 knows, so fields read inside the loop would be re-read on
     * every iteration. The own operand is loaded at its own call site, apart from the mapping's:
     * a load site that meets two kinds of segment loses the intrinsics (see compileFloatKernels).
     */

    private static long floats(ReduceArgs a, int opc, boolean avg) {
        VectorSpecies<Float> sp = FLOATS;
        int n = a.ranks, self = a.self, results = a.resultCount;
        long count = a.count, ownOff = a.ownOffset, outOff = a.outOffset;
        MemorySegment own = a.own, shm = a.shm, out = a.out;
        long[] terms = a.terms, at = a.results;
        long upper = sp.loopBound(count);
        FloatVector divisor = FloatVector.broadcast(sp, (float) n);
        for (long b = 0, end = upper * 4; b < end; b += sp.vectorByteSize()) {
            FloatVector acc = self == 0 ? FloatVector.fromMemorySegment(sp, own, ownOff + b, NO)
                    : FloatVector.fromMemorySegment(sp, shm, terms[0] + b, NO);
            for (int j = 1; j < n; j++) {
                FloatVector t = j == self ? FloatVector.fromMemorySegment(sp, own, ownOff + b, NO)
                        : FloatVector.fromMemorySegment(sp, shm, terms[j] + b, NO);
                acc = switch (opc) {
                    case SUM -> acc.add(t);
                    case PRODUCT -> acc.mul(t);
                    case MIN -> acc.min(t);
                    default -> acc.max(t);
                };
            }
            if (avg) {
                acc = acc.div(divisor);
            }
            acc.intoMemorySegment(out, outOff + b, NO);
            for (int r = 0; r < results; r++) {
                acc.intoMemorySegment(shm, at[r] + b, NO);
            }
        }
        return upper;
    }

    private static long doubles(ReduceArgs a, int opc, boolean avg) {
        VectorSpecies<Double> sp = DOUBLES;
        int n = a.ranks, self = a.self, results = a.resultCount;
        long count = a.count, ownOff = a.ownOffset, outOff = a.outOffset;
        MemorySegment own = a.own, shm = a.shm, out = a.out;
        long[] terms = a.terms, at = a.results;
        long upper = sp.loopBound(count);
        DoubleVector divisor = DoubleVector.broadcast(sp, (double) n);
        for (long b = 0, end = upper * 8; b < end; b += sp.vectorByteSize()) {
            DoubleVector acc = self == 0 ? DoubleVector.fromMemorySegment(sp, own, ownOff + b, NO)
                    : DoubleVector.fromMemorySegment(sp, shm, terms[0] + b, NO);
            for (int j = 1; j < n; j++) {
                DoubleVector t = j == self ? DoubleVector.fromMemorySegment(sp, own, ownOff + b, NO)
                        : DoubleVector.fromMemorySegment(sp, shm, terms[j] + b, NO);
                acc = switch (opc) {
                    case SUM -> acc.add(t);
                    case PRODUCT -> acc.mul(t);
                    case MIN -> acc.min(t);
                    default -> acc.max(t);
                };
            }
            if (avg) {
                acc = acc.div(divisor);
            }
            acc.intoMemorySegment(out, outOff + b, NO);
            for (int r = 0; r < results; r++) {
                acc.intoMemorySegment(shm, at[r] + b, NO);
            }
        }
        return upper;
    }

    private static long ints(ReduceArgs a, int opc, boolean avg) {
        VectorSpecies<Integer> sp = INTS;
        int n = a.ranks, self = a.self, results = a.resultCount;
        long count = a.count, ownOff = a.ownOffset, outOff = a.outOffset;
        MemorySegment own = a.own, shm = a.shm, out = a.out;
        long[] terms = a.terms, at = a.results;
        long upper = sp.loopBound(count);
        IntVector divisor = IntVector.broadcast(sp, n);
        for (long b = 0, end = upper * 4; b < end; b += sp.vectorByteSize()) {
            IntVector acc = self == 0 ? IntVector.fromMemorySegment(sp, own, ownOff + b, NO)
                    : IntVector.fromMemorySegment(sp, shm, terms[0] + b, NO);
            for (int j = 1; j < n; j++) {
                IntVector t = j == self ? IntVector.fromMemorySegment(sp, own, ownOff + b, NO)
                        : IntVector.fromMemorySegment(sp, shm, terms[j] + b, NO);
                acc = switch (opc) {
                    case SUM -> acc.add(t);
                    case PRODUCT -> acc.mul(t);
                    case MIN -> acc.min(t);
                    default -> acc.max(t);
                };
            }
            if (avg) {
                acc = acc.div(divisor);
            }
            acc.intoMemorySegment(out, outOff + b, NO);
            for (int r = 0; r < results; r++) {
                acc.intoMemorySegment(shm, at[r] + b, NO);
            }
        }
        return upper;
    }

    private static long longs(ReduceArgs a, int opc, boolean avg) {
        VectorSpecies<Long> sp = LONGS;
        int n = a.ranks, self = a.self, results = a.resultCount;
        long count = a.count, ownOff = a.ownOffset, outOff = a.outOffset;
        MemorySegment own = a.own, shm = a.shm, out = a.out;
        long[] terms = a.terms, at = a.results;
        long upper = sp.loopBound(count);
        LongVector divisor = LongVector.broadcast(sp, (long) n);
        for (long b = 0, end = upper * 8; b < end; b += sp.vectorByteSize()) {
            LongVector acc = self == 0 ? LongVector.fromMemorySegment(sp, own, ownOff + b, NO)
                    : LongVector.fromMemorySegment(sp, shm, terms[0] + b, NO);
            for (int j = 1; j < n; j++) {
                LongVector t = j == self ? LongVector.fromMemorySegment(sp, own, ownOff + b, NO)
                        : LongVector.fromMemorySegment(sp, shm, terms[j] + b, NO);
                acc = switch (opc) {
                    case SUM -> acc.add(t);
                    case PRODUCT -> acc.mul(t);
                    case MIN -> acc.min(t);
                    default -> acc.max(t);
                };
            }
            if (avg) {
                acc = acc.div(divisor);
            }
            acc.intoMemorySegment(out, outOff + b, NO);
            for (int r = 0; r < results; r++) {
                acc.intoMemorySegment(shm, at[r] + b, NO);
            }
        }
        return upper;
    }

    /* The scalar tails: fewer elements than one vector, so a branch per element on the type costs nothing. */

    /** float32 and float64 from element {@code from} on, in double (see the class comment). */
    private static void floatingTail(ReduceArgs a, int opc, boolean avg, long from) {
        boolean f32 = a.type == DataType.FLOAT32;
        int e = f32 ? 4 : 8;
        int n = a.ranks;
        for (long i = from; i < a.count; i++) {
            long b = i * e;
            double acc = floating(a, 0, b, f32);
            for (int j = 1; j < n; j++) {
                double t = floating(a, j, b, f32);
                acc = switch (opc) {
                    case SUM -> acc + t;
                    case PRODUCT -> acc * t;
                    case MIN -> Math.min(acc, t);
                    default -> Math.max(acc, t);
                };
                if (f32) {
                    acc = (float) acc;
                }
            }
            if (avg) {
                acc = acc / n;
            }
            if (f32) {
                float v = (float) acc;
                a.out.set(F32, a.outOffset + b, v);
                for (int r = 0; r < a.resultCount; r++) {
                    a.shm.set(F32, a.results[r] + b, v);
                }
            } else {
                a.out.set(F64, a.outOffset + b, acc);
                for (int r = 0; r < a.resultCount; r++) {
                    a.shm.set(F64, a.results[r] + b, acc);
                }
            }
        }
    }

    /** Operand j's element at byte {@code b}; the own operand read at its own sites, apart from the mapping's. */
    private static double floating(ReduceArgs a, int j, long b, boolean f32) {
        if (j == a.self) {
            return f32 ? a.own.get(F32, a.ownOffset + b) : a.own.get(F64, a.ownOffset + b);
        }
        return f32 ? a.shm.get(F32, a.terms[j] + b) : a.shm.get(F64, a.terms[j] + b);
    }

    /** int32 and int64 from element {@code from} on, in long (see the class comment). */
    private static void integralTail(ReduceArgs a, int opc, boolean avg, long from) {
        boolean i32 = a.type == DataType.INT32;
        int e = i32 ? 4 : 8;
        int n = a.ranks;
        for (long i = from; i < a.count; i++) {
            long b = i * e;
            long acc = integral(a, 0, b, i32);
            for (int j = 1; j < n; j++) {
                long t = integral(a, j, b, i32);
                acc = switch (opc) {
                    case SUM -> acc + t;
                    case PRODUCT -> acc * t;
                    case MIN -> Math.min(acc, t);
                    default -> Math.max(acc, t);
                };
            }
            if (i32) {
                int v = avg ? (int) acc / n : (int) acc;
                a.out.set(I32, a.outOffset + b, v);
                for (int r = 0; r < a.resultCount; r++) {
                    a.shm.set(I32, a.results[r] + b, v);
                }
            } else {
                long v = avg ? acc / n : acc;
                a.out.set(I64, a.outOffset + b, v);
                for (int r = 0; r < a.resultCount; r++) {
                    a.shm.set(I64, a.results[r] + b, v);
                }
            }
        }
    }

    private static long integral(ReduceArgs a, int j, long b, boolean i32) {
        if (j == a.self) {
            return i32 ? a.own.get(I32, a.ownOffset + b) : a.own.get(I64, a.ownOffset + b);
        }
        return i32 ? a.shm.get(I32, a.terms[j] + b) : a.shm.get(I64, a.terms[j] + b);
    }
}
