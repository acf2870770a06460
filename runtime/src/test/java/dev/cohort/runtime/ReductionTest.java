package dev.cohort.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ReduceOp;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.function.DoubleBinaryOperator;
import java.util.function.LongBinaryOperator;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The kernels against a per-element reference, on every type and operation, heap and direct
 * buffers, lengths on both sides of the kernels' chunk; the fused fold-and-finish gives the same
 * bits as the fold followed by the finish.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ReductionTest {

    private static final int[] COUNTS = {0, 1, 7, 2048, 2049, 5000};
    private static final int WORLD = 3;

    @ParameterizedTest
    @EnumSource(
            value = DataType.class,
            names = {"FLOAT16", "BFLOAT16"},
            mode = EnumSource.Mode.EXCLUDE)
    void everyOperationMatchesTheReference(DataType type) {
        forEveryCase(type, 7, (op, count, what, x0, x1, x2) -> {
            double[] x1Before = values(x1);
            double[] x2Before = values(x2);

            DenseBuffer stepwise = x0.copyLike();
            Reduction.accumulate(op, stepwise, x1);
            Reduction.accumulate(op, stepwise, x2);
            Reduction.finish(op, stepwise, WORLD);
            assertThat(values(stepwise)).as(what).containsExactly(reference(op, x0, x1, x2));

            DenseBuffer fused = x0.copyLike();
            Reduction.accumulate(op, fused, x1);
            Reduction.accumulateAndFinish(op, fused, x2, WORLD);
            assertThat(values(fused)).as(what + ", fused").containsExactly(values(stepwise));

            // From the highest rank's side: x0 op x1 folded in front of its own x2.
            DenseBuffer lower = x0.copyLike();
            Reduction.accumulate(op, lower, x1);
            DenseBuffer own = x2.copyLike();
            Reduction.accumulateLeftAndFinish(op, lower, own, WORLD);
            assertThat(values(own)).as(what + ", left and fused").containsExactly(values(stepwise));
            assertThat(values(x1)).as(what + ": operand untouched").containsExactly(x1Before);
            assertThat(values(x2)).as(what + ": operand untouched").containsExactly(x2Before);
        });
    }

    @ParameterizedTest
    @EnumSource(
            value = DataType.class,
            names = {"FLOAT16", "BFLOAT16"})
    void sixteenBitFloatsComputeInFloat32AndRoundOncePerPass(DataType type) {
        forEveryCase(type, 11, (op, count, what, x0, x1, x2) -> {
            // One pass over all operands: float32 in rank order, one rounding.
            DenseBuffer folded = DenseBuffer.allocate(type, count);
            Reduction.foldHalves(op, java.util.List.of(x0, x1, x2), folded, WORLD);
            // Pairwise: a rounding per fold, and one more for AVG's division.
            DenseBuffer stepwise = x0.copyLike();
            Reduction.accumulate(op, stepwise, x1);
            Reduction.accumulate(op, stepwise, x2);
            Reduction.finish(op, stepwise, WORLD);
            for (int i = 0; i < count; i++) {
                float a = (float) x0.getDouble(i);
                float b = (float) x1.getDouble(i);
                float c = (float) x2.getDouble(i);
                float once = f(op, f(op, a, b), c);
                float twice = (float) round(type, f(op, (float) round(type, f(op, a, b)), c));
                if (op == ReduceOp.AVG) {
                    once = once / WORLD;
                    twice = twice / WORLD;
                }
                assertThat(folded.getDouble(i))
                        .as(what + " folded, element " + i)
                        .isEqualTo(round(type, once));
                assertThat(stepwise.getDouble(i))
                        .as(what + " stepwise, element " + i)
                        .isEqualTo(round(type, twice));
            }
        });
    }

    private static double round(DataType type, float v) {
        return dev.cohort.api.collective.HalfFloats.toFloat(
                type, dev.cohort.api.collective.HalfFloats.fromFloat(type, v));
    }

    /** ((x0 op x1) op x2), then AVG's division, element by element in the element type. */
    private static double[] reference(ReduceOp op, DenseBuffer x0, DenseBuffer x1, DenseBuffer x2) {
        double[] out = new double[x0.count()];
        for (int i = 0; i < out.length; i++) {
            out[i] = switch (x0.dataType()) {
                case FLOAT32 -> {
                    float v = f(op, f(op, (float) x0.getDouble(i), (float) x1.getDouble(i)), (float) x2.getDouble(i));
                    yield op == ReduceOp.AVG ? v / WORLD : v;
                }
                case FLOAT64 -> {
                    double v = d(op, d(op, x0.getDouble(i), x1.getDouble(i)), x2.getDouble(i));
                    yield op == ReduceOp.AVG ? v / WORLD : v;
                }
                case INT32 -> {
                    int v = (int) l(op, (int) l(op, x0.getLong(i), x1.getLong(i)), x2.getLong(i));
                    yield op == ReduceOp.AVG ? v / WORLD : v;
                }
                case INT64 -> {
                    long v = l(op, l(op, x0.getLong(i), x1.getLong(i)), x2.getLong(i));
                    yield op == ReduceOp.AVG ? (double) (v / WORLD) : (double) v;
                }
                case FLOAT16, BFLOAT16 -> throw new IllegalArgumentException("see sixteenBitFloats");
            };
        }
        return out;
    }

    /** One case: three ranks' operands of {@code count} elements, described by {@code what}. */
    @FunctionalInterface
    private interface Case {
        void check(ReduceOp op, int count, String what, DenseBuffer x0, DenseBuffer x1, DenseBuffer x2);
    }

    /** Every op and count, on heap and direct buffers, with random operands of {@code type} from {@code seed}. */
    private static void forEveryCase(DataType type, long seed, Case body) {
        Random random = new Random(seed);
        for (ReduceOp op : ReduceOp.values()) {
            for (int count : COUNTS) {
                for (boolean direct : new boolean[] {false, true}) {
                    DenseBuffer x0 = random(type, count, random, direct);
                    DenseBuffer x1 = random(type, count, random, direct);
                    DenseBuffer x2 = random(type, count, random, direct);
                    body.check(
                            op,
                            count,
                            type + " " + op + " count " + count + (direct ? " direct" : " heap"),
                            x0,
                            x1,
                            x2);
                }
            }
        }
    }

    /** A reference operation on doubles (and on floats through them) and on longs. */
    private record Reference(DoubleBinaryOperator onDoubles, LongBinaryOperator onLongs) {}

    private static final Map<ReduceOp, Reference> REFERENCE = Map.of(
            ReduceOp.SUM, new Reference(Double::sum, Long::sum),
            ReduceOp.AVG, new Reference(Double::sum, Long::sum),
            ReduceOp.PRODUCT, new Reference((x, y) -> x * y, (x, y) -> x * y),
            ReduceOp.MIN, new Reference(Math::min, Math::min),
            ReduceOp.MAX, new Reference(Math::max, Math::max));

    /**
     * On floats: the double result rounded once to float, which is the float operation's own
     * result (a double holds more than twice a float's precision, so +, x, min and max round alike).
     */
    private static float f(ReduceOp op, float x, float y) {
        return (float) d(op, x, y);
    }

    private static double d(ReduceOp op, double x, double y) {
        return REFERENCE.get(op).onDoubles().applyAsDouble(x, y);
    }

    private static long l(ReduceOp op, long x, long y) {
        return REFERENCE.get(op).onLongs().applyAsLong(x, y);
    }

    private static DenseBuffer random(DataType type, int count, Random random, boolean direct) {
        DenseBuffer b = direct ? DenseBuffer.allocateDirect(type, count) : DenseBuffer.allocate(type, count);
        for (int i = 0; i < count; i++) {
            switch (type) {
                case FLOAT32, FLOAT64 -> b.setDouble(i, random.nextGaussian() * 100);
                case INT32, INT64 -> b.setLong(i, random.nextInt(2001) - 1000);
                case FLOAT16, BFLOAT16 -> b.setDouble(i, random.nextGaussian() * 10);
            }
        }
        return b;
    }

    private static double[] values(DenseBuffer b) {
        double[] v = new double[b.count()];
        for (int i = 0; i < v.length; i++) {
            v[i] = b.dataType() == DataType.INT64 ? (double) b.getLong(i) : b.getDouble(i);
        }
        return v;
    }
}
