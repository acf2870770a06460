package dev.cohort.runtime;

import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.collective.Work;

/** Issues a call made on one group on another group of the same ranks (a view forwarding to the group it wraps). */
public final class Reissue {

    private Reissue() {}

    /** {@code c} issued on {@code g}: same kind, buffers, op, root and counts. */
    public static Work on(ProcessGroup g, Collective c) {
        return switch (c.kind()) {
            case ALLREDUCE -> g.allreduce(c.input(), c.op());
            case BROADCAST -> g.broadcast(c.input(), c.root());
            case ALLGATHER -> g.allgather(c.input(), c.output());
            case ALLGATHERV -> g.allgatherv(c.input(), c.output(), c.counts());
            case REDUCE_SCATTER -> g.reduceScatter(c.input(), c.output(), c.op());
            case BARRIER -> g.barrier();
            case REDUCE -> g.reduce(c.input(), c.op(), c.root());
            case GATHER -> g.gather(c.input(), c.output(), c.root());
            case GATHERV -> g.gatherv(c.input(), c.output(), c.counts(), c.root());
            case SCATTER -> g.scatter(c.input(), c.output(), c.root());
            case SCATTERV -> g.scatterv(c.input(), c.output(), c.counts(), c.root());
            case ALLTOALL -> g.alltoall(c.input(), c.output());
            case ALLTOALLV -> g.alltoallv(c.input(), c.counts(), c.output(), c.receiveCounts());
            case SEND -> g.send(c.input(), c.root(), c.tag());
            case RECV -> g.recv(c.input(), c.root(), c.tag());
        };
    }
}
