package dev.cohort.runtime;

import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ReduceOp;

import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;

/**
 * Element-wise reduction kernels shared by the Java engines. {@code accumulate} folds one
 * operand into an accumulator; callers fold ranks in rank order so every rank that computes a
 * result computes the same bits.
 */
public final class Reduction {

    /** Float32 elements moved through heap arrays at a time, where the JIT vectorizes the loop. */
    private static final int CHUNK = 2048;
    private static final ThreadLocal<float[][]> SCRATCH = ThreadLocal.withInitial(() -> new float[2][CHUNK]);

    private Reduction() {
    }

    /** {@code acc[i] = op(acc[i], in[i])}; AVG accumulates like SUM (see {@link #finish}). */
    public static void accumulate(ReduceOp op, DenseBuffer acc, DenseBuffer in) {
        check(acc, in);
        fold(op, acc, in);
    }

    /**
     * {@code acc[i] = op(left[i], acc[i])}: folds an operand that comes <em>before</em> the
     * accumulator in rank order, without a copy (a rank holding its own input folds the lower
     * ranks' result in front of it).
     */
    public static void accumulateLeft(ReduceOp op, DenseBuffer left, DenseBuffer acc) {
        check(acc, left);
        if (acc.dataType() == DataType.FLOAT32) {
            combine(op, (FloatBuffer) left.view(), (FloatBuffer) acc.view(), (FloatBuffer) acc.view(), acc.count());
            return;
        }
        DenseBuffer result = left.copyLike();
        fold(op, result, acc);
        acc.copyFrom(result);
    }

    private static void check(DenseBuffer acc, DenseBuffer in) {
        if (in.count() != acc.count() || in.dataType() != acc.dataType()) {
            throw new IllegalArgumentException("cannot reduce " + in.describe() + " into " + acc.describe());
        }
    }

    /** {@code out[i] = op(a[i], b[i])}, a chunk at a time through heap scratch arrays; {@code out} may be {@code a} or {@code b}. */
    private static void combine(ReduceOp op, FloatBuffer a, FloatBuffer b, FloatBuffer out, int n) {
        float[][] scratch = SCRATCH.get();
        float[] x = scratch[0];
        float[] y = scratch[1];
        for (int from = 0; from < n; from += CHUNK) {
            int m = Math.min(CHUNK, n - from);
            a.get(from, x, 0, m);
            b.get(from, y, 0, m);
            switch (op) {
                case SUM, AVG -> { for (int i = 0; i < m; i++) x[i] = x[i] + y[i]; }
                case PRODUCT -> { for (int i = 0; i < m; i++) x[i] = x[i] * y[i]; }
                case MIN -> { for (int i = 0; i < m; i++) x[i] = Math.min(x[i], y[i]); }
                case MAX -> { for (int i = 0; i < m; i++) x[i] = Math.max(x[i], y[i]); }
            }
            out.put(from, x, 0, m);
        }
    }

    private static void fold(ReduceOp op, DenseBuffer acc, DenseBuffer in) {
        int n = acc.count();
        switch (acc.dataType()) {
            case FLOAT32 -> combine(op, (FloatBuffer) acc.view(), (FloatBuffer) in.view(), (FloatBuffer) acc.view(), n);
            case FLOAT64 -> {
                DoubleBuffer a = (DoubleBuffer) acc.view();
                DoubleBuffer b = (DoubleBuffer) in.view();
                switch (op) {
                    case SUM, AVG -> { for (int i = 0; i < n; i++) a.put(i, a.get(i) + b.get(i)); }
                    case PRODUCT -> { for (int i = 0; i < n; i++) a.put(i, a.get(i) * b.get(i)); }
                    case MIN -> { for (int i = 0; i < n; i++) a.put(i, Math.min(a.get(i), b.get(i))); }
                    case MAX -> { for (int i = 0; i < n; i++) a.put(i, Math.max(a.get(i), b.get(i))); }
                }
            }
            case INT32 -> {
                IntBuffer a = (IntBuffer) acc.view();
                IntBuffer b = (IntBuffer) in.view();
                // in long: two's complement sums and products agree with int's in the low 32 bits
                for (int i = 0; i < n; i++) a.put(i, (int) apply(op, (long) a.get(i), b.get(i)));
            }
            case INT64 -> {
                LongBuffer a = (LongBuffer) acc.view();
                LongBuffer b = (LongBuffer) in.view();
                for (int i = 0; i < n; i++) a.put(i, apply(op, a.get(i), b.get(i)));
            }
        }
    }

    private static long apply(ReduceOp op, long x, long y) {
        return switch (op) {
            case SUM, AVG -> x + y;
            case PRODUCT -> x * y;
            case MIN -> Math.min(x, y);
            case MAX -> Math.max(x, y);
        };
    }

    /** Completes a reduction over {@code worldSize} operands: AVG divides, the others do nothing. */
    public static void finish(ReduceOp op, DenseBuffer acc, int worldSize) {
        if (op != ReduceOp.AVG || worldSize == 1) {
            return;
        }
        int n = acc.count();
        switch (acc.dataType()) {
            case FLOAT32 -> {
                FloatBuffer a = (FloatBuffer) acc.view();
                for (int i = 0; i < n; i++) a.put(i, a.get(i) / worldSize);
            }
            case FLOAT64 -> { for (int i = 0; i < n; i++) acc.setDouble(i, acc.getDouble(i) / worldSize); }
            case INT32, INT64 -> { for (int i = 0; i < n; i++) acc.setLong(i, acc.getLong(i) / worldSize); }
        }
    }
}
