package dev.cohort.api;

/**
 * A framework integration's wrapping for {@link DistributedBackend#distribute}, found with
 * {@link java.util.ServiceLoader}: the PyTorch module, for example, supplies one for its models.
 */
public interface Distributor {

    /** Whether this integration knows how to wrap {@code request}'s model. */
    boolean supports(DistributeRequest<?, ?, ?, ?> request);

    /**
     * Gets the framework ready in this process when a backend initializes, before the program's
     * first call into it (the torch integration loads libtorch here, as it must be loaded: several
     * workers starting at once on an empty native cache would crash if the program's first tensor
     * loaded it). Called once per process; nothing by default.
     *
     * @throws BackendUnavailableException when the framework cannot load here, saying why
     */
    default void prepare() {
    }

    /** Wraps the request's values for training on {@code backend}'s workers. */
    <M, O, D, S> Distributed<M, O, D, S> distribute(DistributedBackend backend, DistributeRequest<M, O, D, S> request);
}
