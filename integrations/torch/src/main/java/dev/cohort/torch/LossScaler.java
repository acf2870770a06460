package dev.cohort.torch;

import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.collective.ReduceOp;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;

/**
 * Dynamic loss scaling for float16 compute (PyTorch's {@code GradScaler}, DeepSpeed's
 * {@code DynamicLossScaler}): the loss is multiplied by the scale before backward so that small
 * gradients do not vanish in float16, and the averaged gradients divided by it before the step.
 * When any rank's averaged gradients hold an infinity or NaN, every rank skips the step and halves
 * the scale: the decision is an allreduce of one flag, so ranks that own different shards of the
 * gradients (ZeRO stage 2) still decide alike. After {@code window} steps without overflow the
 * scale doubles.
 */
final class LossScaler {

    /** 2^16, as PyTorch's {@code GradScaler} starts. */
    static final double DEFAULT_INITIAL_SCALE = 65536;

    /** Steps without overflow before the scale doubles, as PyTorch's {@code growth_interval}. */
    static final int DEFAULT_WINDOW = 2000;

    private final ProcessGroup group;
    private final int window;
    private double scale;
    private int goodSteps;
    private long skipped;
    /** Set by {@link #unscale}: the gradients of the step under way overflowed on some rank. */
    private boolean overflow;

    LossScaler(ProcessGroup group, double initialScale, int window) {
        if (!(initialScale >= 1) || Double.isInfinite(initialScale)) {
            throw new IllegalArgumentException(
                    "the initial loss scale must be finite and at least 1, got " + initialScale);
        }
        if (window < 1) {
            throw new IllegalArgumentException("the loss scale window must be at least 1 step, got " + window);
        }
        this.group = group;
        this.scale = initialScale;
        this.window = window;
    }

    double scale() {
        return scale;
    }

    long skippedSteps() {
        return skipped;
    }

    /** What a checkpoint keeps: the scale's bits, the steps since it last changed, the steps skipped. */
    long[] state() {
        return new long[] {Double.doubleToLongBits(scale), goodSteps, skipped};
    }

    /** Continues from a checkpoint's {@link #state()}. */
    void restore(long[] state) {
        scale = Double.longBitsToDouble(state[0]);
        goodSteps = (int) state[1];
        skipped = state[2];
    }

    /** The loss times the scale, to call backward on. */
    Tensor scaled(Tensor loss) {
        try (Scalar s = new Scalar(scale)) {
            return loss.mul(s);
        }
    }

    /**
     * Divides the averaged gradients by the scale and agrees with every rank whether they all are
     * finite; call once per step, after averaging, on every rank.
     */
    void unscale(GradientAverager gradients) {
        gradients.scaleAveraged(1 / scale);
        float[] overflowed = {gradients.averagedFinite() ? 0 : 1};
        if (group.size() > 1) {
            group.allreduce(DenseBuffer.of(overflowed), ReduceOp.MAX).await();
        }
        overflow = overflowed[0] > 0;
    }

    /** Whether the step under way must be skipped: some rank's averaged gradients overflowed. */
    boolean overflowed() {
        return overflow;
    }

    /**
     * After the step, taken or skipped: halves the scale after an overflow, doubles it after a
     * window without.
     *
     * @throws IllegalStateException when the gradients overflowed at scale 1: they are not finite
     *     whatever the scale (a NaN in the data or the loss), so skipping steps would never end
     */
    void update() {
        if (overflow && scale <= 1) {
            throw new IllegalStateException("the averaged gradients hold an infinity or NaN even with the loss "
                    + "unscaled (scale 1, after " + skipped + " skipped steps): the loss or the data is not finite, "
                    + "which no loss scale mends; check the inputs and the learning rate");
        }
        if (overflow) {
            scale = Math.max(1, scale / 2);
            goodSteps = 0;
            skipped++;
            overflow = false;
        } else if (++goodSteps == window) {
            scale *= 2;
            goodSteps = 0;
        }
    }

    /** Whether every element of {@code t} is finite: their sum is, unless one is not (or they are near float's limit). */
    static boolean finite(Tensor t) {
        try (PointerScope temporaries = new PointerScope()) {
            return Float.isFinite(t.sum().item_float());
        }
    }
}
