package dev.cohort.runtime.threads;

import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.CollectiveException;
import dev.cohort.api.collective.Work;
import dev.cohort.runtime.AbstractProcessGroup;
import dev.cohort.runtime.Subgroup;
import java.time.Duration;

/** One rank's view of a group whose ranks are threads of this JVM. */
final class ThreadsProcessGroup extends AbstractProcessGroup {

    private final ThreadsExchange exchange;

    ThreadsProcessGroup(ThreadsExchange exchange, int rank, Duration timeout) {
        super(rank, exchange.size(), timeout);
        this.exchange = exchange;
    }

    @Override
    protected Work start(Collective call, Duration timeout) {
        return exchange.submit(rank(), call, timeout);
    }

    /** A subgroup: an exchange of its own, shared by its members through this one. */
    @Override
    protected AbstractProcessGroup connectSubgroup(Subgroup spec) {
        return new ThreadsProcessGroup(exchange.child(spec.label(), spec.size()), spec.rank(), spec.timeout());
    }

    @Override
    protected Work pointToPoint(Collective call, Duration timeout) {
        return exchange.message(rank(), call, timeout);
    }

    @Override
    protected void release() {
        exchange.breakWith(new CollectiveException("rank " + rank() + " closed the process group"));
    }
}
