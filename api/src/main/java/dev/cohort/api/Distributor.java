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
     * first call into it (the torch integration extracts libtorch's natives here, one process at a
     * time: several workers starting at once on an empty native cache would crash if the program's
     * first tensor extracted them). It must not load what a program that uses another framework
     * does not need: every integration on the class path is prepared. Called once per process;
     * nothing by default.
     *
     * @throws BackendUnavailableException when the framework cannot load here, saying why
     */
    default void prepare() {}

    /** Wraps the request's values for training on {@code backend}'s workers. */
    <M, O, D, S> Distributed<M, O, D, S> distribute(DistributedBackend backend, DistributeRequest<M, O, D, S> request);
}
