package dev.cohort.torch;

/**
 * How a {@link DistributedOptimizer} averages gradients across ranks: every gradient on every rank
 * ({@link GradientBuckets}, allreduce), or each rank's own shard of them ({@link ZeroShards} at
 * ZeRO stage 2, reduce-scatter).
 */
interface GradientAverager {

    /** Averages; afterwards each gradient this rank's optimizer step needs holds the average. */
    void averageGradients();

    /** Sets the gradients to none. */
    void clearGradients();

    /** How many gradients backward hooks have seen (0 without hooks): grows while backward runs. */
    long gradientsSeen();

    /** Opens a scope whose backward passes start no communication ({@link DistributedOptimizer#noSync()}). */
    void pauseHooks();

    void resumeHooks();

    /** How long the training thread has been held by gradient communication so far, in nanoseconds. */
    long communicationWaitNanos();

    /** The ranks the gradients are averaged over. */
    dev.cohort.api.collective.ProcessGroup group();

    /**
     * Runs {@code announce} once per iteration, just before the iteration's first collective (a
     * {@link dev.cohort.api.Join} scope announces the averaging there); null: nothing.
     */
    void announceBefore(Runnable announce);

    /** Multiplies the averaged gradients this rank's optimizer steps with by {@code factor}. */
    void scaleAveraged(double factor);

    /** Whether the averaged gradients this rank's optimizer steps with are all finite (after averaging). */
    boolean averagedFinite();
}
