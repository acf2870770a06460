package dev.cohort.api.collective;

/** The collective operations of {@link ProcessGroup}. */
public enum OpKind {
    ALLREDUCE, BROADCAST, ALLGATHER, ALLGATHERV, REDUCE_SCATTER, BARRIER;

    public String label() {
        return name().toLowerCase(java.util.Locale.ROOT).replace("_", "-");
    }
}
