package dev.cohort.api;

import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.collective.ReduceOp;
import java.util.Map;
import java.util.function.IntFunction;

/**
 * Checks that every rank still holds the same model: data-parallel training keeps the ranks'
 * parameters bit-identical, so any difference means that some rank updated its model on its own
 * (an optimizer stepped without averaging, rank-dependent code, a missed broadcast) and the ranks
 * now train different models without a word.
 *
 * <p>A framework integration computes one fingerprint per parameter (the exact integer sum of
 * the parameter's bit patterns: independent of summation order and thread count, and changed by
 * any single-element difference) at the steps this check says are {@link #due}, and hands them to
 * {@link #compare}, which costs one allreduce of {@code 2 × parameters} int64 values and throws
 * {@link ModelsDivergedException} on every rank alike when the ranks differ.
 *
 * <p>Checked steps: the first, then every {@code every}-th ({@value #DEFAULT_EVERY} by default;
 * environment variable {@value #ENV_EVERY}, 0 turns it off).
 */
public final class DivergenceCheck {

    /** Environment variable: steps between checks ({@code 0} turns the check off). */
    public static final String ENV_EVERY = "COHORT_DIVERGENCE_CHECK";
    /** Steps between checks when {@value #ENV_EVERY} is not set. */
    public static final int DEFAULT_EVERY = 100;

    private final ProcessGroup group;
    private final int every;
    /** The last step at which the ranks were compared and agreed; 0 before the first. */
    private long lastAgreed;

    /**
     * @param every steps between checks; 0 checks never
     */
    public DivergenceCheck(ProcessGroup group, int every) {
        if (every < 0) {
            throw new IllegalArgumentException("steps between divergence checks must be >= 0 (0: off), got " + every);
        }
        this.group = group;
        this.every = every;
    }

    /** A check with the interval {@value #ENV_EVERY} in {@code env} sets, else {@value #DEFAULT_EVERY}. */
    public static DivergenceCheck fromEnvironment(ProcessGroup group, Map<String, String> env) {
        return new DivergenceCheck(group, every(env));
    }

    /** A check configured from this process's environment. */
    public static DivergenceCheck fromEnvironment(ProcessGroup group) {
        return fromEnvironment(group, System.getenv());
    }

    /** The interval {@value #ENV_EVERY} sets in {@code env}, else the default; a bad value is refused. */
    public static int every(Map<String, String> env) {
        String value = env.get(ENV_EVERY);
        if (value == null || value.isBlank()) {
            return DEFAULT_EVERY;
        }
        try {
            int n = Integer.parseInt(value.trim());
            if (n >= 0) {
                return n;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException(
                ENV_EVERY + " must be a number of steps >= 0 (0 turns the check off), got '" + value + "'");
    }

    /**
     * The fingerprint of one parameter: the exact sum of its elements' bit patterns as integers of
     * their width (wrapping in 64 bits), so independent of the order of summation and changed by
     * any single element that differs.
     */
    public static long fingerprint(DenseBuffer values) {
        java.util.Optional<java.nio.ByteBuffer> bytes = values.bytes();
        if (bytes.isPresent()) {
            return fingerprint(bytes.get(), values.dataType().byteSize());
        }
        long sum = 0;
        for (int i = 0; i < values.count(); i++) {
            sum += values.dataType().isFloatingPoint()
                    ? Double.doubleToRawLongBits(values.getDouble(i))
                    : values.getLong(i);
        }
        return sum;
    }

    /**
     * {@link #fingerprint(DenseBuffer)} of the elements of {@code width} bytes (8, 4, 2 or 1) from
     * {@code bytes}' position to its limit, read in native order: for integrations whose tensors
     * hand out their bytes.
     */
    public static long fingerprint(java.nio.ByteBuffer bytes, int width) {
        if (width != 8 && width != 4 && width != 2 && width != 1) {
            throw new IllegalArgumentException("elements of 8, 4, 2 or 1 bytes, not " + width);
        }
        java.nio.ByteBuffer b = bytes.slice().order(java.nio.ByteOrder.nativeOrder());
        int n = b.remaining() / width;
        long sum = 0;
        switch (width) {
            case 8 -> {
                java.nio.LongBuffer longs = b.asLongBuffer();
                for (int i = 0; i < n; i++) {
                    sum += longs.get(i);
                }
            }
            case 4 -> {
                java.nio.IntBuffer ints = b.asIntBuffer();
                for (int i = 0; i < n; i++) {
                    sum += ints.get(i);
                }
            }
            case 2 -> {
                java.nio.ShortBuffer shorts = b.asShortBuffer();
                for (int i = 0; i < n; i++) {
                    sum += shorts.get(i);
                }
            }
            default -> { // 1
                for (int i = 0; i < n; i++) {
                    sum += b.get(i);
                }
            }
        }
        return sum;
    }

    /** Steps between checks (0: off). */
    public int every() {
        return every;
    }

    /** Whether {@code step} (counted from 1) is checked: the first, then every {@link #every()}-th; none on one rank. */
    public boolean due(long step) {
        return every > 0 && group.size() > 1 && (step == 1 || step % every == 0);
    }

    /**
     * Compares this rank's parameter fingerprints with every other rank's (a collective: every
     * rank calls it at the same step with as many fingerprints).
     *
     * @param step         the step just taken, for the message
     * @param fingerprints one per parameter, in an order all ranks share
     * @param names        the name of parameter {@code i}, for the message
     * @throws ModelsDivergedException on every rank, naming the first parameter that differs
     */
    public void compare(long step, long[] fingerprints, IntFunction<String> names) {
        int n = fingerprints.length;
        long[] extremes = new long[2 * n];
        for (int i = 0; i < n; i++) {
            extremes[i] = fingerprints[i];
            extremes[n + i] = ~fingerprints[i]; // max of ~x is ~(min of x)
        }
        group.allreduce(DenseBuffer.of(extremes), ReduceOp.MAX).await();
        for (int i = 0; i < n; i++) {
            long max = extremes[i];
            long min = ~extremes[n + i];
            if (max != min) {
                throw new ModelsDivergedException(step, lastAgreed, i, names.apply(i));
            }
        }
        lastAgreed = step;
    }

    /** The ranks' models differ: thrown by {@link #compare} on every rank. */
    public static final class ModelsDivergedException extends IllegalStateException {

        private final long step;
        private final String parameter;

        ModelsDivergedException(long step, long lastAgreed, int index, String name) {
            super("the ranks' models differ at step " + step + " ("
                    + (lastAgreed > 0 ? "they were the same at step " + lastAgreed : "first check") + "): parameter "
                    + index + " (" + name + ") is not the same on every "
                    + "rank. Some rank changed its model without the others: an optimizer stepped without averaging (step "
                    + "through what Cohort returned: the DistributedOptimizer or DistributedTrainer, not the optimizer or "
                    + "trainer you had), code that depends on the rank, or parameters set after they were distributed. ("
                    + ENV_EVERY + " sets the steps between checks; "
                    + "0 turns them off.)");
            this.step = step;
            this.parameter = name;
        }

        /** The step at which the difference was found. */
        public long step() {
            return step;
        }

        /** The name of the first parameter that differs. */
        public String parameter() {
            return parameter;
        }
    }
}
