package dev.cohort.mpi;

import dev.cohort.api.collective.ProcessGroup;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.Optional;

/**
 * Some ranks of an MPI job as a group of their own, for a backend built on top of MPI (the hier
 * backend's group of host leaders). Every rank of the job makes it, because MPI makes
 * communicators collectively; the members hold a group; every rank holds MPI until it closes
 * ({@code MPI_Finalize} is collective too).
 */
public final class MpiSubgroup implements AutoCloseable {

    private final OpenMpi mpi;
    /** Null on the ranks left out. */
    private final MpiProcessGroup group;

    private boolean closed;

    private MpiSubgroup(OpenMpi mpi, MpiProcessGroup group) {
        this.mpi = mpi;
        this.group = group;
    }

    /**
     * Joins the MPI job (within {@code options}' connect timeout) and splits it: the ranks with
     * {@code member} form a group, ranked by {@code key}, named {@code label} in messages; the
     * others get none. Every rank of the job must call it. {@code ranksOnThisHost} sets the default
     * polling (see {@link MpiOptions#spin(int)}).
     */
    public static MpiSubgroup split(
            MpiOptions options, Map<String, String> env, boolean member, int key, String label, int ranksOnThisHost) {
        long deadline = System.nanoTime() + options.connectTimeout().toNanos();
        OpenMpi mpi = OpenMpi.acquire(options.library(env));
        boolean met = false;
        try {
            MemorySegment world = mpi.commWorld;
            int rank = mpi.rank(world);
            int size = mpi.size(world);
            MpiEngine.checkLaunch(env, rank, size);
            MpiEngine.meet(
                    mpi, world, deadline, options.connectTimeout(), label + ", mpi rank " + rank + " of " + size);
            met = true;
            Optional<MemorySegment> members = mpi.split(world, member, key);
            if (members.isEmpty()) {
                return new MpiSubgroup(mpi, null);
            }
            MemorySegment comm = members.get();
            MpiProcessGroup.Settings settings = MpiProcessGroup.Settings.of(options, ranksOnThisHost);
            return new MpiSubgroup(
                    mpi,
                    new MpiProcessGroup(
                            mpi, label, comm, mpi.dup(comm), mpi.rank(comm), mpi.size(comm), settings, () -> {}));
        } catch (RuntimeException e) {
            OpenMpi.release(mpi, met ? label + ": " + e.getMessage() : null);
            throw e;
        }
    }

    /** The group, on its members. */
    public Optional<ProcessGroup> group() {
        return Optional.ofNullable(group);
    }

    /**
     * After a failure: peers may wait inside MPI for this rank, and MPI can neither cancel their
     * calls nor finalize without them, so the whole job is aborted ({@code why} is logged first).
     */
    public synchronized void abandon(String why) {
        if (closed) {
            return;
        }
        closed = true;
        OpenMpi.release(mpi, why);
    }

    /** Frees the group and finalizes MPI (with every other rank); aborts instead after a call gave up. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        boolean failed = false;
        if (group != null) {
            group.close();
            failed = group.failed();
        }
        OpenMpi.release(mpi, failed ? OpenMpi.CLOSED_AFTER_FAILURE : null);
    }
}
