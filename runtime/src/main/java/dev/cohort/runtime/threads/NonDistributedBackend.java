package dev.cohort.runtime.threads;

import dev.cohort.api.Connection;
import dev.cohort.api.DistributeRequest;
import dev.cohort.api.Distributed;
import dev.cohort.api.DistributedBackend;

/**
 * The backend used when none is chosen (the seed's Dummy): one worker, rank 0; barriers return at
 * once, {@code distribute} returns its inputs, {@code averageAll} returns the value. Lets one
 * training program run undistributed.
 */
public final class NonDistributedBackend extends DistributedBackend {

    public static final String NAME = dev.cohort.api.Backends.NONE;

    @Override
    public String name() {
        return NAME;
    }

    @Override
    protected Connection connect() {
        return new ThreadsWorld(1).connect(0);
    }

    @Override
    public <M, O, D, S> Distributed<M, O, D, S> distribute(DistributeRequest<M, O, D, S> request) {
        java.util.Objects.requireNonNull(request, "request");
        worldSize(); // requires initialize()
        return request.unchanged();
    }
}
