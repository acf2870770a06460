package dev.cohort.api;

/**
 * The result of {@link DistributedBackend#distribute}: the model, optimizer, training data and
 * learning-rate scheduler wrapped for distributed training (the seed's 4-tuple, with names).
 */
public record Distributed<M, O, D, S>(M model, O optimizer, D trainingData, S lrScheduler) {}
