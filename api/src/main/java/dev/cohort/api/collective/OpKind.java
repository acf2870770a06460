package dev.cohort.api.collective;

/** The collective operations of {@link ProcessGroup}. */
public enum OpKind {
    ALLREDUCE,
    BROADCAST,
    ALLGATHER,
    ALLGATHERV,
    REDUCE_SCATTER,
    BARRIER,
    REDUCE,
    GATHER,
    GATHERV,
    SCATTER,
    SCATTERV,
    ALLTOALL,
    ALLTOALLV,
    /** Point-to-point, not collectives: only the two ranks take part. */
    SEND,
    RECV;

    /** Whether this is a message between two ranks (send, recv) rather than a collective. */
    public boolean isPointToPoint() {
        return this == SEND || this == RECV;
    }

    /** Whether the call's {@link Collective#counts()} are per-rank counts that every rank passes alike. */
    public boolean hasSharedCounts() {
        return this == ALLGATHERV || this == GATHERV || this == SCATTERV;
    }

    /**
     * Whether every engine runs this kind with an algorithm of its own. Engines may compose the
     * others (reduce, gather(v), scatter(v), all-to-all(v)) from these.
     */
    public boolean isCore() {
        return ordinal() <= BARRIER.ordinal();
    }

    /** Whether the call names a root rank. */
    public boolean hasRoot() {
        return this == BROADCAST
                || this == REDUCE
                || this == GATHER
                || this == GATHERV
                || this == SCATTER
                || this == SCATTERV;
    }

    public String label() {
        return name().toLowerCase(java.util.Locale.ROOT).replace("_", "-");
    }
}
