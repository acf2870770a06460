package dev.cohort.spark.ml;

import java.io.Serializable;

/**
 * One epoch of a {@link CohortEstimator#fit}, over every rank.
 *
 * @param epoch         the epoch, from 1
 * @param loss          the mean training loss (cross-entropy) of its steps, averaged over the ranks
 * @param accuracy      the fraction of its training rows predicted right as they were trained on
 * @param seconds       how long it took
 * @param samplesPerSec rows trained on per second, all ranks together
 * @param attempt       the attempt of the training stage that trained it: 0, or the retry that
 *                      resumed from the checkpoint directory after a failure
 */
public record EpochStats(int epoch, double loss, double accuracy, double seconds, double samplesPerSec, int attempt)
        implements Serializable {}
