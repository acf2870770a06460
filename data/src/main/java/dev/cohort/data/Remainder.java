package dev.cohort.data;

/**
 * What happens to the examples of an epoch (or of what is left of it after an elastic re-form)
 * that do not divide evenly among the ranks, so that every rank runs the same number of steps:
 * as PyTorch's {@code DistributedSampler} does with {@code drop_last} false or true.
 */
public enum Remainder {
    /** Repeat examples from the start of the epoch's order until every rank has as many. */
    PAD,
    /** Leave the last {@code examples % worldSize} examples of the order out of the epoch. */
    DROP
}
