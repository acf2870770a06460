package dev.cohort.shm;

import dev.cohort.core.collective.DataType;
import dev.cohort.core.collective.ReduceOp;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
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
        switch (type) {
            case FLOAT32 -> reduceFloat(opc, avg, n, self, own, ownOff, shm, terms, count, out, outOff, resultOff, moreResults);
            case FLOAT64 -> reduceDouble(opc, avg, n, self, own, ownOff, shm, terms, count, out, outOff, resultOff, moreResults);
            case INT32 -> reduceInt(opc, avg, n, self, own, ownOff, shm, terms, count, out, outOff, resultOff, moreResults);
            case INT64 -> reduceLong(opc, avg, n, self, own, ownOff, shm, terms, count, out, outOff, resultOff, moreResults);
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
