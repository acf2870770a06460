package dev.cohort.hier;

import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.runtime.store.JobNotes;
import java.util.Objects;

/**
 * This rank's part of the engine between hosts (gloo, tcp or mpi): on a host's leader, the group
 * of the hosts' leaders and the notes the leaders leave each other in its store; how to leave it
 * when done, and how after a failure. With mpi every rank holds a part (MPI is joined and left by
 * every process); with gloo and tcp only the leaders do.
 *
 * @param group   the leaders' group; null on a rank that does not lead its host
 * @param notes   the leaders' notes; null where the engine has no store (mpi)
 * @param leave   leaves the engine when the job is done
 * @param abandon leaves it after the failure it is given, so that the other hosts fail now, not at
 *                their timeout (with mpi: logs it and aborts the job, which MPI cannot leave while
 *                peers wait in it)
 */
record LeadersGroup(ProcessGroup group, JobNotes notes, Runnable leave, java.util.function.Consumer<String> abandon) {

    LeadersGroup {
        Objects.requireNonNull(leave, "leave");
        Objects.requireNonNull(abandon, "abandon");
    }
}
