package dev.cohort.shm;

import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.ReduceOp;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * Element-wise reductions over the ranks' operands with the Vector API (plain loops over
 * {@code MemorySegment} were not vectorized in the prototype and ran 2-3x slower).
 *
 * <p>The words: {@code count} elements are reduced; rank j's operand starts at byte
 * {@code terms[j]} of the mapping, except this rank's own ({@code self}), which is read from the
 * caller's memory {@code own} at {@code ownOff}. Operands are folded in rank order 0, 1, ..., n-1,
 * so the result does not depend on which rank computes it. The result goes to {@code out} at
 * {@code outOff} and, when {@code resultOff >= 0}, also to the mapping at {@code resultOff} and
 * at each offset in {@code moreResults} (null for none): where the other ranks copy it from, or,
 * for an allreduce in place, their own buffers. AVG sums and then divides by {@code n} (truncating for integers), on
 * the rank that reduces, so every rank copies the same bits. MIN and MAX follow
 * {@link Math#min}/{@link Math#max}, like the scalar tails.
 */
final class ReduceKernels {

    private static final ByteOrder NO = ByteOrder.nativeOrder();
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED;
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final int SUM = 0;
    private static final int PRODUCT = 1;
    private static final int MIN = 2;
    private static final int MAX = 3;

    private ReduceKernels() {
    }

    static void reduce(DataType type, ReduceOp op, int n, int self, MemorySegment own, long ownOff,
                       MemorySegment shm, long[] terms, long count, MemorySegment out, long outOff, long resultOff, long[] moreResults) {
        int opc = switch (op) {
            case SUM, AVG -> SUM;
            case PRODUCT -> PRODUCT;
            case MIN -> MIN;
            case MAX -> MAX;
        };
        boolean avg = op == ReduceOp.AVG && n > 1;
        if (n == 2 && op == ReduceOp.SUM && type == DataType.FLOAT32 && moreResults == null) {
            if (own == shm && out == shm && resultOff >= 0) {
                sumTwoFloatsInPlace(shm, ownOff, terms[1 - self], count, outOff, resultOff);
                return;
            }
            if (own.isNative() && out.isNative() && own != shm) {
                sumTwoFloats(own, ownOff, shm, terms[1 - self], count, out, outOff, resultOff);
                return;
            }
        }
        switch (type) {
            case FLOAT32 -> reduceFloat(opc, avg, n, self, own, ownOff, shm, terms, count, out, outOff, resultOff, moreResults);
            case FLOAT64 -> reduceDouble(opc, avg, n, self, own, ownOff, shm, terms, count, out, outOff, resultOff, moreResults);
            case INT32 -> reduceInt(opc, avg, n, self, own, ownOff, shm, terms, count, out, outOff, resultOff, moreResults);
            case INT64 -> reduceLong(opc, avg, n, self, own, ownOff, shm, terms, count, out, outOff, resultOff, moreResults);
        }
    }

    private static final VectorSpecies<Float> FLOATS = FloatVector.SPECIES_PREFERRED;

    /**
     * Runs the float32 kernels on scratch memory until C2 has compiled them, or until
     * {@code budgetNanos} have passed; returns whether they got there. Until C2 compiles a Vector
     * API loop it runs 20-100x slower than the loop it replaces (a 4 KiB allreduce took 45 us in
     * the kernel instead of 0.1), and on a pinned core the compiler thread only gets the CPU
     * while the rank is not spinning in a barrier: in a benchmark of 2 pinned ranks, 2,000 calls
     * were not enough. Here, before the group's first call, nothing spins. Each kernel is called
     * with the kinds of segment it will meet, and only those: a kernel that has seen both a
     * mapping's segment and a direct buffer's in one place was compiled without the intrinsics,
     * boxing every vector (9.5 KB allocated per 4 KiB allreduce in place, 7.8 us instead of 1.5).
     *
     * @param shm the group's mapping; {@code [scratch, scratch + 3 KiB)} is this rank's to use
     */
    static boolean compileFloatKernels(MemorySegment shm, long scratch, int n, long budgetNanos) {
        int count = 256;
        long bytes = count * 4L;
        MemorySegment direct = MemorySegment.ofBuffer(ByteBuffer.allocateDirect((int) bytes * 2));
        long[] terms = new long[Math.max(2, n)];
        Arrays.fill(terms, scratch);
        long deadline = System.nanoTime() + budgetNanos;
        while (true) {
            for (int i = 0; i < 64; i++) {
                runFloatKernels(direct, shm, scratch, bytes, terms, count);
            }
            long t0 = System.nanoTime();
            runFloatKernels(direct, shm, scratch, bytes, terms, count);
            long took = System.nanoTime() - t0;
            if (took < 4_000) {   // 8 kernel calls over 1 KiB each: compiled, they take well under 1 us
                return true;
            }
            if (t0 - deadline > 0) {
                return false;
            }
        }
    }

    private static void runFloatKernels(MemorySegment direct, MemorySegment shm, long scratch, long bytes,
                                        long[] terms, int count) {
        sumTwoFloats(direct, 0, shm, scratch, count, direct, bytes, -1);
        sumTwoFloats(direct, 0, shm, scratch, count, direct, bytes, scratch + bytes);
        sumTwoFloatsInPlace(shm, scratch + bytes, scratch, count, scratch + bytes, scratch + 2 * bytes);
        reduceFloat(SUM, false, terms.length, 0, direct, 0, shm, terms, count, direct, bytes, -1, null);
        reduceFloat(SUM, false, terms.length, 0, direct, 0, shm, terms, count, direct, bytes, scratch + bytes, null);
        reduceFloat(SUM, false, terms.length, 1, shm, scratch, shm, terms, count, shm, scratch + 2 * bytes, -1, null);
        reduceFloat(SUM, true, terms.length, 1, shm, scratch, shm, terms, count, shm, scratch + 2 * bytes,
                scratch + bytes, null);
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

    private static void reduceFloat(int opc, boolean avg, int n, int self, MemorySegment own, long ownOff,
                                   MemorySegment shm, long[] terms, long count, MemorySegment out, long outOff,
                                   long resultOff, long[] moreResults) {
        VectorSpecies<Float> sp = FloatVector.SPECIES_PREFERRED;
        int step = sp.length();
        long upper = count - count % step;
        FloatVector divisor = FloatVector.broadcast(sp, (float) n);
        long i = 0;
        for (; i < upper; i += step) {
            long b = i * 4L;
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
            if (resultOff >= 0) {
                acc.intoMemorySegment(shm, resultOff + b, NO);
            }
            if (moreResults != null) {
                for (long r : moreResults) {
                    acc.intoMemorySegment(shm, r + b, NO);
                }
            }
        }
        for (; i < count; i++) {
            long b = i * 4L;
            float acc = self == 0 ? own.get(F32, ownOff + b) : shm.get(F32, terms[0] + b);
            for (int j = 1; j < n; j++) {
                float t = j == self ? own.get(F32, ownOff + b) : shm.get(F32, terms[j] + b);
                acc = switch (opc) {
                    case SUM -> acc + t;
                    case PRODUCT -> acc * t;
                    case MIN -> Math.min(acc, t);
                    default -> Math.max(acc, t);
                };
            }
            if (avg) {
                acc = acc / n;
            }
            out.set(F32, outOff + b, acc);
            if (resultOff >= 0) {
                shm.set(F32, resultOff + b, acc);
            }
            if (moreResults != null) {
                for (long r : moreResults) {
                    shm.set(F32, r + b, acc);
                }
            }
        }
    }

    private static void reduceDouble(int opc, boolean avg, int n, int self, MemorySegment own, long ownOff,
                                   MemorySegment shm, long[] terms, long count, MemorySegment out, long outOff,
                                   long resultOff, long[] moreResults) {
        VectorSpecies<Double> sp = DoubleVector.SPECIES_PREFERRED;
        int step = sp.length();
        long upper = count - count % step;
        DoubleVector divisor = DoubleVector.broadcast(sp, (double) n);
        long i = 0;
        for (; i < upper; i += step) {
            long b = i * 8L;
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
            if (resultOff >= 0) {
                acc.intoMemorySegment(shm, resultOff + b, NO);
            }
            if (moreResults != null) {
                for (long r : moreResults) {
                    acc.intoMemorySegment(shm, r + b, NO);
                }
            }
        }
        for (; i < count; i++) {
            long b = i * 8L;
            double acc = self == 0 ? own.get(F64, ownOff + b) : shm.get(F64, terms[0] + b);
            for (int j = 1; j < n; j++) {
                double t = j == self ? own.get(F64, ownOff + b) : shm.get(F64, terms[j] + b);
                acc = switch (opc) {
                    case SUM -> acc + t;
                    case PRODUCT -> acc * t;
                    case MIN -> Math.min(acc, t);
                    default -> Math.max(acc, t);
                };
            }
            if (avg) {
                acc = acc / n;
            }
            out.set(F64, outOff + b, acc);
            if (resultOff >= 0) {
                shm.set(F64, resultOff + b, acc);
            }
            if (moreResults != null) {
                for (long r : moreResults) {
                    shm.set(F64, r + b, acc);
                }
            }
        }
    }

    private static void reduceInt(int opc, boolean avg, int n, int self, MemorySegment own, long ownOff,
                                   MemorySegment shm, long[] terms, long count, MemorySegment out, long outOff,
                                   long resultOff, long[] moreResults) {
        VectorSpecies<Integer> sp = IntVector.SPECIES_PREFERRED;
        int step = sp.length();
        long upper = count - count % step;
        IntVector divisor = IntVector.broadcast(sp, n);
        long i = 0;
        for (; i < upper; i += step) {
            long b = i * 4L;
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
            if (resultOff >= 0) {
                acc.intoMemorySegment(shm, resultOff + b, NO);
            }
            if (moreResults != null) {
                for (long r : moreResults) {
                    acc.intoMemorySegment(shm, r + b, NO);
                }
            }
        }
        for (; i < count; i++) {
            long b = i * 4L;
            int acc = self == 0 ? own.get(I32, ownOff + b) : shm.get(I32, terms[0] + b);
            for (int j = 1; j < n; j++) {
                int t = j == self ? own.get(I32, ownOff + b) : shm.get(I32, terms[j] + b);
                acc = switch (opc) {
                    case SUM -> acc + t;
                    case PRODUCT -> acc * t;
                    case MIN -> Math.min(acc, t);
                    default -> Math.max(acc, t);
                };
            }
            if (avg) {
                acc = acc / n;
            }
            out.set(I32, outOff + b, acc);
            if (resultOff >= 0) {
                shm.set(I32, resultOff + b, acc);
            }
            if (moreResults != null) {
                for (long r : moreResults) {
                    shm.set(I32, r + b, acc);
                }
            }
        }
    }

    private static void reduceLong(int opc, boolean avg, int n, int self, MemorySegment own, long ownOff,
                                   MemorySegment shm, long[] terms, long count, MemorySegment out, long outOff,
                                   long resultOff, long[] moreResults) {
        VectorSpecies<Long> sp = LongVector.SPECIES_PREFERRED;
        int step = sp.length();
        long upper = count - count % step;
        LongVector divisor = LongVector.broadcast(sp, (long) n);
        long i = 0;
        for (; i < upper; i += step) {
            long b = i * 8L;
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
            if (resultOff >= 0) {
                acc.intoMemorySegment(shm, resultOff + b, NO);
            }
            if (moreResults != null) {
                for (long r : moreResults) {
                    acc.intoMemorySegment(shm, r + b, NO);
                }
            }
        }
        for (; i < count; i++) {
            long b = i * 8L;
            long acc = self == 0 ? own.get(I64, ownOff + b) : shm.get(I64, terms[0] + b);
            for (int j = 1; j < n; j++) {
                long t = j == self ? own.get(I64, ownOff + b) : shm.get(I64, terms[j] + b);
                acc = switch (opc) {
                    case SUM -> acc + t;
                    case PRODUCT -> acc * t;
                    case MIN -> Math.min(acc, t);
                    default -> Math.max(acc, t);
                };
            }
            if (avg) {
                acc = acc / n;
            }
            out.set(I64, outOff + b, acc);
            if (resultOff >= 0) {
                shm.set(I64, resultOff + b, acc);
            }
            if (moreResults != null) {
                for (long r : moreResults) {
                    shm.set(I64, r + b, acc);
                }
            }
        }
    }
}
