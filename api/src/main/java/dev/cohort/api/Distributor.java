package dev.cohort.api;

/**
 * A framework integration's wrapping for {@link DistributedBackend#distribute}, found with
 * {@link java.util.ServiceLoader}: the PyTorch module, for example, supplies one for its models.
 */
public interface Distributor {

    /** Whether this integration knows how to wrap {@code request}'s model. */
    boolean supports(DistributeRequest<?, ?, ?, ?> request);

    /** Wraps the request's values for training on {@code backend}'s workers. */
    <M, O, D, S> Distributed<M, O, D, S> distribute(DistributedBackend backend, DistributeRequest<M, O, D, S> request);
}
