package dev.cohort.runtime;

import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.HalfFloats;
import dev.cohort.api.collective.ReduceOp;
import java.nio.ShortBuffer;
import java.util.List;

/**
 * Element-wise reduction kernels shared by the Java engines. {@code accumulate} folds one
 * operand into an accumulator; callers fold ranks in rank order so every rank that computes a
 * result computes the same bits. An average divides once, after the last operand: by
 * {@link #finish}, or in the same pass as the last fold ({@code ...AndFinish}), which reads and
 * writes the memory once instead of twice.
 *
 * <p>16-bit floating-point elements are computed in float32 and rounded to 16 bits once per
 * pass: once per fold here, and once in all where the caller folds every operand in one pass
 * ({@link #foldHalves}).
 *
 * <p>Elements go through small heap arrays a chunk at a time ({@link FloatFolds} and its siblings),
 * where the JIT vectorizes the loops; element-by-element access to a direct buffer is not vectorized and
 * measured about ten times slower (a 7 MiB average took 1.6 ms that way).
 */
public final class Reduction {

    /** Elements moved through heap arrays at a time (two chunks of doubles fit in L1 beside the operands). */
    private static final int CHUNK = 2048;

    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

    private static final class Scratch {
        final float[] x = new float[CHUNK];
        final float[] y = new float[CHUNK];
        final double[] dx = new double[CHUNK];
        final double[] dy = new double[CHUNK];
        final int[] ix = new int[CHUNK];
        final int[] iy = new int[CHUNK];
        final long[] lx = new long[CHUNK];
        final long[] ly = new long[CHUNK];
        final short[] bits = new short[CHUNK];
    }

    private Reduction() {}

    /** {@code acc[i] = op(acc[i], in[i])}; AVG accumulates like SUM (see {@link #finish}). */
    public static void accumulate(ReduceOp op, DenseBuffer acc, DenseBuffer in) {
        check(acc, in);
        combine(op, acc, in, acc, 1);
    }

    /**
     * {@code acc[i] = op(left[i], acc[i])}: folds an operand that comes <em>before</em> the
     * accumulator in rank order, without a copy (a rank holding its own input folds the lower
     * ranks' result in front of it).
     */
    public static void accumulateLeft(ReduceOp op, DenseBuffer left, DenseBuffer acc) {
        check(acc, left);
        combine(op, left, acc, acc, 1);
    }

    /** {@link #accumulate} of the last operand, then {@link #finish} over {@code worldSize} operands, in one pass. */
    public static void accumulateAndFinish(ReduceOp op, DenseBuffer acc, DenseBuffer in, int worldSize) {
        check(acc, in);
        combine(op, acc, in, acc, divisor(op, worldSize));
    }

    /** {@link #accumulateLeft} of the last operand, then {@link #finish} over {@code worldSize} operands, in one pass. */
    public static void accumulateLeftAndFinish(ReduceOp op, DenseBuffer left, DenseBuffer acc, int worldSize) {
        check(acc, left);
        combine(op, left, acc, acc, divisor(op, worldSize));
    }

    /** Completes a reduction over {@code worldSize} operands: AVG divides, the others do nothing. */
    public static void finish(ReduceOp op, DenseBuffer acc, int worldSize) {
        int divisor = divisor(op, worldSize);
        if (divisor == 1) {
            return;
        }
        int n = acc.count();
        Scratch s = SCRATCH.get();
        switch (acc.dataType()) {
            case FLOAT32 -> FloatFolds.divide(acc, divisor, s.x);
            case FLOAT64 -> DoubleFolds.divide(acc, divisor, s.dx);
            case INT32 -> IntFolds.divide(acc, divisor, s.ix);
            case INT64 -> LongFolds.divide(acc, divisor, s.lx);
            case FLOAT16, BFLOAT16 -> {
                for (int from = 0; from < n; from += CHUNK) {
                    int m = Math.min(CHUNK, n - from);
                    readHalves(acc, from, m, s.x);
                    FloatFolds.divide(s.x, divisor, m);
                    writeHalves(s.x, acc, from, m);
                }
            }
        }
    }

    /**
     * {@code out = op(operands[0], ..., operands[n-1])} over 16-bit floats, then finished over
     * {@code worldSize} operands: computed in float32 in rank order, rounded to 16 bits once.
     * {@code out} may be one of the operands.
     */
    public static void foldHalves(ReduceOp op, List<DenseBuffer> operands, DenseBuffer out, int worldSize) {
        if (!out.dataType().isHalfPrecision()) {
            throw new IllegalArgumentException("foldHalves folds float16 or bfloat16 buffers, not " + out.describe());
        }
        for (DenseBuffer in : operands) {
            check(out, in);
        }
        halves(op, operands, out, divisor(op, worldSize));
    }

    /** {@code out = op(operands...) / divisor}, in float32, rounded to 16 bits once; {@code out} may be an operand. */
    private static void halves(ReduceOp op, List<DenseBuffer> operands, DenseBuffer out, int divisor) {
        Scratch s = SCRATCH.get();
        float[] x = s.x;
        float[] y = s.y;
        int n = out.count();
        for (int from = 0; from < n; from += CHUNK) {
            int m = Math.min(CHUNK, n - from);
            readHalves(operands.get(0), from, m, x);
            for (int r = 1; r < operands.size(); r++) {
                readHalves(operands.get(r), from, m, y);
                FloatFolds.fold(op, x, y, m);
            }
            if (divisor != 1) {
                FloatFolds.divide(x, divisor, m);
            }
            writeHalves(x, out, from, m);
        }
    }

    /** Elements {@code [from, from + m)} of a 16-bit buffer, as floats, into {@code x}. */
    private static void readHalves(DenseBuffer in, int from, int m, float[] x) {
        short[] bits = SCRATCH.get().bits;
        ((ShortBuffer) in.view()).get(from, bits, 0, m);
        if (in.dataType() == DataType.BFLOAT16) {
            for (int i = 0; i < m; i++) x[i] = Float.intBitsToFloat((bits[i] & 0xFFFF) << 16);
        } else {
            for (int i = 0; i < m; i++) x[i] = HalfFloats.fp16ToFloat(bits[i]);
        }
    }

    /** {@code x[0, m)} rounded to 16 bits into elements {@code [from, from + m)} of {@code out}. */
    private static void writeHalves(float[] x, DenseBuffer out, int from, int m) {
        short[] bits = SCRATCH.get().bits;
        if (out.dataType() == DataType.BFLOAT16) {
            for (int i = 0; i < m; i++) bits[i] = HalfFloats.floatToBf16(x[i]);
        } else {
            for (int i = 0; i < m; i++) bits[i] = HalfFloats.floatToFp16(x[i]);
        }
        ((ShortBuffer) out.view()).put(from, bits, 0, m);
    }

    /** What an average over {@code worldSize} operands divides by; 1 for the other operations. */
    private static int divisor(ReduceOp op, int worldSize) {
        return op == ReduceOp.AVG ? worldSize : 1;
    }

    private static void check(DenseBuffer acc, DenseBuffer in) {
        if (in.count() != acc.count() || in.dataType() != acc.dataType()) {
            throw new IllegalArgumentException("cannot reduce " + in.describe() + " into " + acc.describe());
        }
    }

    /**
     * {@code out[i] = op(a[i], b[i]) / divisor} (no division when {@code divisor} is 1);
     * {@code out} may be {@code a} or {@code b}.
     */
    private static void combine(ReduceOp op, DenseBuffer a, DenseBuffer b, DenseBuffer out, int divisor) {
        Scratch s = SCRATCH.get();
        switch (out.dataType()) {
            case FLOAT32 -> FloatFolds.combine(op, a, b, out, divisor, s.x, s.y);
            case FLOAT64 -> DoubleFolds.combine(op, a, b, out, divisor, s.dx, s.dy);
            case INT32 -> IntFolds.combine(op, a, b, out, divisor, s.ix, s.iy);
            case INT64 -> LongFolds.combine(op, a, b, out, divisor, s.lx, s.ly);
            case FLOAT16, BFLOAT16 -> halves(op, List.of(a, b), out, divisor);
        }
    }
}
