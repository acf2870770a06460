package dev.cohort.data;

import dev.cohort.api.collective.ProcessGroup;
import java.time.Duration;
import java.util.Objects;

/**
 * How a {@link ShardLoader} reads: fluent setters, each property beside its default. The plan's
 * inputs (seed, remainder, shuffle buffer, world size) must be the same on every rank, and the
 * same when a run resumes from a {@link DataPosition}, or the ranks' shares will not fit together.
 */
public final class LoaderOptions implements Cloneable {

    int rank = 0;
    int worldSize = 1;
    int batchSize = 32;
    long seed = 0;
    Remainder remainder = Remainder.PAD;
    int shuffleBuffer = 1024;
    int readers = 1;
    int queueDepth = 4;
    Duration timeout = Duration.ofMinutes(2);
    ProcessGroup group;

    /** This rank and the number of ranks (default 0 of 1; set by {@link #agreeOnErrors}). */
    public LoaderOptions rank(int rank, int worldSize) {
        if (worldSize < 1 || rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException("rank " + rank + " is not in a world of " + worldSize);
        }
        this.rank = rank;
        this.worldSize = worldSize;
        return this;
    }

    /** Examples per batch on each rank (default 32); the last batch of an epoch may be smaller. */
    public LoaderOptions batchSize(int batchSize) {
        this.batchSize = positive(batchSize, "batchSize");
        return this;
    }

    /** Examples per batch on each rank. */
    public int batchSize() {
        return batchSize;
    }

    /** The seed of the row-group permutation and the shuffle buffers (default 0). */
    public LoaderOptions seed(long seed) {
        this.seed = seed;
        return this;
    }

    /** Pad or drop what does not divide among the ranks (default {@link Remainder#PAD}). */
    public LoaderOptions remainder(Remainder remainder) {
        this.remainder = Objects.requireNonNull(remainder, "remainder");
        return this;
    }

    /** The shuffle buffer within a rank, in examples (default 1024; 0 or 1: no shuffle within the rank). */
    public LoaderOptions shuffleBuffer(int examples) {
        if (examples < 0) {
            throw new IllegalArgumentException("shuffleBuffer must be >= 0, not " + examples);
        }
        this.shuffleBuffer = examples;
        return this;
    }

    /** Reader threads that decode row groups ahead (default 1). */
    public LoaderOptions readers(int readers) {
        this.readers = positive(readers, "readers");
        return this;
    }

    /** Ready batches kept ahead of the training thread (default 4). */
    public LoaderOptions queueDepth(int batches) {
        this.queueDepth = positive(batches, "queueDepth");
        return this;
    }

    /**
     * How long the training thread waits for a batch before it fails (default 2 minutes); keep it
     * below the group's timeout when errors are agreed on, so a slow rank fails before the others'
     * collective times out.
     */
    public LoaderOptions timeout(Duration timeout) {
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("timeout must be positive, not " + timeout);
        }
        this.timeout = timeout;
        return this;
    }

    /**
     * Agree on errors with the other ranks of {@code group} before each batch (one one-int MAX
     * allreduce per batch): when any rank fails to read, every rank throws the same
     * {@link DataException}, naming the rank that failed, instead of the others waiting in their
     * next collective. Also sets the rank and world size from the group. Every rank must call
     * {@link ShardLoader#next()} the same number of times, as it does when all run the epoch.
     */
    public LoaderOptions agreeOnErrors(ProcessGroup group) {
        this.group = Objects.requireNonNull(group, "group");
        return rank(group.rank(), group.size());
    }

    /** A copy: what a loader keeps, so that later calls on the options given to it do not change it. */
    public LoaderOptions copy() {
        try {
            return (LoaderOptions) super.clone(); // every field is a value or immutable (the group is shared)
        } catch (CloneNotSupportedException e) {
            throw new AssertionError(e);
        }
    }

    static int positive(int value, String name) {
        if (value < 1) {
            throw new IllegalArgumentException(name + " must be >= 1, not " + value);
        }
        return value;
    }
}
