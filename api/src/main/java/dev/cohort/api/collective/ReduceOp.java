package dev.cohort.api.collective;

/**
 * How allreduce and reduce-scatter combine the ranks' elements.
 *
 * <p>{@link #AVG} is the sum divided by the world size; on integer types the quotient is
 * truncated toward zero (as Java's {@code /}).
 */
public enum ReduceOp {
    SUM,
    AVG,
    MIN,
    MAX,
    PRODUCT
}
