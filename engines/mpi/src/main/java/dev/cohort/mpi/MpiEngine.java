package dev.cohort.mpi;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import dev.cohort.api.Connection;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.LaunchEnvironment;
import dev.cohort.api.Topology;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.JoinException;
import dev.cohort.runtime.WaitPolicy;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;

/**
 * Joins this process to the MPI job: the engine behind {@link MpiBackend} (loaded reflectively,
 * because it needs JDK 22+). Steps, within {@code --mpi-connect-timeout}: MPI is initialized; the
 * ranks meet in a nonblocking barrier (so a rank that never starts is a timeout, not a hang);
 * then the world's communicators are duplicated (one for data, one for signatures) and split by
 * host for the node group, and the hosts are numbered in the order of their first ranks.
 */
public final class MpiEngine {

    private static final System.Logger LOG = System.getLogger(MpiEngine.class.getName());

    /** Meeting the other ranks: sleeps from 1 µs, twice as long each time, up to 1 ms (a join is no hot path). */
    private static final WaitPolicy MEETING =
            new WaitPolicy(0, 0, 1_000, 1_000_000, Long.MAX_VALUE, WaitPolicy.Clock.SYSTEM);

    private MpiEngine() {}

    /** Called by {@link MpiBackend#connect()}. */
    public static Connection connect(MpiOptions options, Map<String, String> env) {
        long deadline = System.nanoTime() + options.connectTimeout().toNanos();
        OpenMpi mpi = OpenMpi.acquire(options.library(env));
        MpiProcessGroup[] groups = new MpiProcessGroup[2];
        boolean met = false;
        try {
            MemorySegment world = mpi.commWorld;
            int rank = mpi.rank(world);
            int size = mpi.size(world);
            String who = "mpi rank " + rank + " of " + size;
            checkLaunch(env, rank, size);
            meet(mpi, world, deadline, options.connectTimeout(), who);
            met = true;
            MemorySegment host = mpi.splitByHost(world, rank);
            int localRank = mpi.rank(host);
            int localSize = mpi.size(host);
            MpiProcessGroup.Settings settings = MpiProcessGroup.Settings.of(options, localSize);
            groups[0] = new MpiProcessGroup(
                    mpi, "mpi world", mpi.dup(world), mpi.dup(world), rank, size, settings, () -> {});
            if (localSize == size) {
                mpi.free(host);
                groups[1] = groups[0];
            } else {
                groups[1] = new MpiProcessGroup(
                        mpi, "mpi host", host, mpi.dup(host), localRank, localSize, settings, () -> {});
            }
            int nodeRank = nodeRank(groups[0], groups[1], rank, size);
            Topology topology = new Topology(rank, size, localRank, localSize, nodeRank);
            if (rank == 0) {
                LOG.log(
                        System.Logger.Level.INFO,
                        "mpi engine: " + mpi.version() + " (" + mpi.library() + "), " + size + " rank(s)");
            }
            MpiProcessGroup worldGroup = groups[0];
            MpiProcessGroup hostGroup = groups[1];
            return new Connection(topology, worldGroup, hostGroup, () -> {
                boolean abort = worldGroup.failed() || hostGroup.failed();
                OpenMpi.release(mpi, abort ? OpenMpi.CLOSED_AFTER_FAILURE : null);
            });
        } catch (RuntimeException e) {
            JoinException failure = e instanceof JoinException j
                    ? j
                    : new JoinException("mpi: could not join the job: " + e.getMessage(), e);
            for (MpiProcessGroup g : groups) {
                if (g != null) {
                    g.close();
                }
            }
            // Once met, the other ranks may be waiting inside MPI for this one: the job ends.
            OpenMpi.release(mpi, met ? failure.getMessage() : null);
            throw failure;
        }
    }

    /** The launch environment's ranks, where it gives any, must be MPI's. */
    static void checkLaunch(Map<String, String> env, int rank, int size) {
        if (!LaunchEnvironment.isPresent(env)) {
            return;
        }
        Topology given = LaunchEnvironment.parseTopology(env);
        if (given.worldSize() != size || given.rank() != rank) {
            throw new JoinException(
                    "the launch environment says RANK=" + given.rank() + " of WORLD_SIZE="
                            + given.worldSize() + " but MPI sees rank " + rank + " of " + size
                            + (size == 1
                                    ? ": MPI runs this process alone; start the ranks with mpirun (mpirun -np "
                                            + given.worldSize() + " ...) or with cohort run --distributed-backend mpi"
                                    : ": start the job with one mpirun"),
                    null);
        }
    }

    /** A nonblocking barrier on {@code world}: every rank entered the engine, or a timeout naming none (MPI cannot tell who). */
    static void meet(OpenMpi mpi, MemorySegment world, long deadline, Duration timeout, String who) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment request = a.allocate(ADDRESS);
            MemorySegment flag = a.allocate(JAVA_INT);
            mpi.check(mpi.ibarrier(world, request), "MPI_Ibarrier");
            WaitPolicy.Wait wait = MEETING.newWait().begin(deadline);
            while (!mpi.testAll(1, request, flag)) {
                if (wait.expired()) {
                    throw new JoinException(
                            who + ": not every rank of the MPI job entered the mpi backend within "
                                    + timeout.toSeconds()
                                    + " s (--mpi-connect-timeout); does every rank initialize it?",
                            null);
                }
                wait.idle();
            }
        }
    }

    /** Hosts numbered in the order of their first (leader's) world rank. */
    private static int nodeRank(MpiProcessGroup world, MpiProcessGroup host, int rank, int size) {
        long[] leader = {rank};
        if (host != world) {
            host.broadcast(DenseBuffer.of(leader), DistributedBackend.ROOT_RANK).await();
        } else {
            leader[0] = 0;
        }
        long[] leaders = new long[size];
        world.allgather(DenseBuffer.of(leader), DenseBuffer.of(leaders)).await();
        long[] distinct = Arrays.stream(leaders).distinct().sorted().toArray();
        return Arrays.binarySearch(distinct, leader[0]);
    }
}
