package dev.cohort.torch;

import org.bytedeco.pytorch.global.torch;

/**
 * The type forward and backward compute in (option {@value TorchDistributor#PRECISION}). The
 * parameters, their gradients and the optimizer state stay float32 whatever it is: libtorch's CPU
 * autocast casts each operation's inputs, so the 16-bit precisions change the arithmetic of the
 * matrix products and convolutions only ({@link DistributedOptimizer#autocast()}).
 */
public enum Precision {
    /** float32 throughout: the default. */
    FP32("fp32", null),
    /** bfloat16 compute: float32's range with 8 bits of mantissa, so no loss scaling is needed. */
    BF16("bf16", torch.ScalarType.BFloat16),
    /**
     * float16 compute: 11 bits of mantissa but a narrow range, so the loss is scaled up before
     * backward and the gradients down after it, with steps that overflow skipped on every rank alike.
     */
    FP16("fp16", torch.ScalarType.Half);

    private final String optionValue;
    private final torch.ScalarType autocastType;

    Precision(String optionValue, torch.ScalarType autocastType) {
        this.optionValue = optionValue;
        this.autocastType = autocastType;
    }

    /** The 16-bit type autocast computes in; null for {@link #FP32}. */
    torch.ScalarType autocastType() {
        return autocastType;
    }

    /** The name option {@value TorchDistributor#PRECISION} and {@code --precision} take. */
    @Override
    public String toString() {
        return optionValue;
    }

    /**
     * The precision named {@code fp32}, {@code bf16} or {@code fp16}.
     *
     * @throws IllegalArgumentException for any other name
     */
    public static Precision of(String name) {
        for (Precision p : values()) {
            if (p.optionValue.equals(name)) {
                return p;
            }
        }
        throw new IllegalArgumentException(
                "precision must be fp32, bf16 or fp16, got '" + name + "' (the parameters stay float32 with any)");
    }
}
