package dev.cohort.core.collective;

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

    private Reduction() {
    }

    /** {@code acc[i] = op(acc[i], in[i])}; AVG accumulates like SUM (see {@link #finish}). */
    public static void accumulate(ReduceOp op, DenseBuffer acc, DenseBuffer in) {
        int n = acc.count();
        if (in.count() != n || in.dataType() != acc.dataType()) {
            throw new IllegalArgumentException("cannot reduce " + in.describe() + " into " + acc.describe());
        }
        switch (acc.dataType()) {
            case FLOAT32 -> {
                FloatBuffer a = (FloatBuffer) acc.view();
                FloatBuffer b = (FloatBuffer) in.view();
                switch (op) {
                    case SUM, AVG -> { for (int i = 0; i < n; i++) a.put(i, a.get(i) + b.get(i)); }
                    case PRODUCT -> { for (int i = 0; i < n; i++) a.put(i, a.get(i) * b.get(i)); }
                    case MIN -> { for (int i = 0; i < n; i++) a.put(i, Math.min(a.get(i), b.get(i))); }
                    case MAX -> { for (int i = 0; i < n; i++) a.put(i, Math.max(a.get(i), b.get(i))); }
                }
            }
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
                switch (op) {
                    case SUM, AVG -> { for (int i = 0; i < n; i++) a.put(i, a.get(i) + b.get(i)); }
                    case PRODUCT -> { for (int i = 0; i < n; i++) a.put(i, a.get(i) * b.get(i)); }
                    case MIN -> { for (int i = 0; i < n; i++) a.put(i, Math.min(a.get(i), b.get(i))); }
                    case MAX -> { for (int i = 0; i < n; i++) a.put(i, Math.max(a.get(i), b.get(i))); }
                }
            }
            case INT64 -> {
                LongBuffer a = (LongBuffer) acc.view();
                LongBuffer b = (LongBuffer) in.view();
                switch (op) {
                    case SUM, AVG -> { for (int i = 0; i < n; i++) a.put(i, a.get(i) + b.get(i)); }
                    case PRODUCT -> { for (int i = 0; i < n; i++) a.put(i, a.get(i) * b.get(i)); }
                    case MIN -> { for (int i = 0; i < n; i++) a.put(i, Math.min(a.get(i), b.get(i))); }
                    case MAX -> { for (int i = 0; i < n; i++) a.put(i, Math.max(a.get(i), b.get(i))); }
                }
            }
        }
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
            case FLOAT64 -> {
                DoubleBuffer a = (DoubleBuffer) acc.view();
                for (int i = 0; i < n; i++) a.put(i, a.get(i) / worldSize);
            }
            case INT32 -> {
                IntBuffer a = (IntBuffer) acc.view();
                for (int i = 0; i < n; i++) a.put(i, a.get(i) / worldSize);
            }
            case INT64 -> {
                LongBuffer a = (LongBuffer) acc.view();
                for (int i = 0; i < n; i++) a.put(i, a.get(i) / worldSize);
            }
        }
    }
}
