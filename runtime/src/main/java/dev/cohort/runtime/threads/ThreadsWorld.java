package dev.cohort.runtime.threads;

import dev.cohort.api.Connection;
import dev.cohort.api.Topology;
import dev.cohort.api.collective.ProcessGroup;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A world of ranks that are threads of this JVM: for running and unit-testing distributed code
 * in one process with any world size. Ranks are laid out on simulated nodes of
 * {@code localWorldSize} consecutive ranks each (the last node may have fewer).
 *
 * <pre>{@code
 * List<Double> means = ThreadsWorld.run(4, rank -> {
 *     try (DistributedBackend backend = new ThreadsBackend()) {
 *         backend.initialize();                     // joins the world of this thread
 *         return backend.averageAll(rank);
 *     }
 * });
 * }</pre>
 */
public final class ThreadsWorld {

    private static final ThreadLocal<Membership> CURRENT = new ThreadLocal<>();

    private final int worldSize;
    private final int localWorldSize;
    private final Duration timeout;
    private final ThreadsExchange world;
    private final ThreadsExchange[] nodes;

    public ThreadsWorld(int worldSize) {
        this(worldSize, worldSize, ProcessGroup.DEFAULT_TIMEOUT);
    }

    public ThreadsWorld(int worldSize, int localWorldSize, Duration timeout) {
        if (worldSize < 1) {
            throw new IllegalArgumentException("world size must be >= 1, got " + worldSize);
        }
        if (localWorldSize < 1 || localWorldSize > worldSize) {
            throw new IllegalArgumentException(
                    "local world size must be in [1, " + worldSize + "], got " + localWorldSize);
        }
        this.worldSize = worldSize;
        this.localWorldSize = localWorldSize;
        this.timeout = timeout;
        this.world = new ThreadsExchange("threads world", worldSize);
        int nodeCount = (worldSize + localWorldSize - 1) / localWorldSize;
        this.nodes = new ThreadsExchange[nodeCount];
        for (int n = 0; n < nodeCount; n++) {
            nodes[n] = new ThreadsExchange("threads node " + n, nodeSize(n));
        }
    }

    public int worldSize() {
        return worldSize;
    }

    /** The world group as seen by {@code rank}. */
    public ProcessGroup group(int rank) {
        return new ThreadsProcessGroup(world, checkRank(rank), timeout);
    }

    /** {@code rank}'s topology, world group and node group. */
    public Connection connect(int rank) {
        checkRank(rank);
        int node = rank / localWorldSize;
        Topology topology = new Topology(rank, worldSize, rank % localWorldSize, nodeSize(node), node);
        ProcessGroup nodeGroup = new ThreadsProcessGroup(nodes[node], topology.localRank(), timeout);
        return new Connection(topology, group(rank), nodeGroup);
    }

    /** The world and rank the calling thread was started for by {@link #run}, or {@code null}. */
    static Membership current() {
        return CURRENT.get();
    }

    record Membership(ThreadsWorld world, int rank) {}

    /** A rank's body for {@link #run}. */
    @FunctionalInterface
    public interface RankTask<T> {
        T run(int rank) throws Exception;
    }

    /** Runs {@code task} on {@code worldSize} threads of one node, with the default timeouts. */
    public static <T> List<T> run(int worldSize, RankTask<T> task) {
        return new ThreadsWorld(worldSize).runAll(task, Duration.ofMinutes(10));
    }

    /**
     * Runs {@code task} once per rank, each on its own thread, within which
     * {@link ThreadsBackend#initialize()} joins this world as that rank. Returns the results in rank
     * order.
     *
     * @throws IllegalStateException when a rank fails (the first failure, naming its rank, with the
     *                               others' failures suppressed) or the ranks are not all done
     *                               within {@code limit}
     */
    public <T> List<T> runAll(RankTask<T> task, Duration limit) {
        ExecutorService pool = Executors.newFixedThreadPool(worldSize, r -> {
            Thread t = new Thread(r);
            t.setDaemon(true);
            return t;
        });
        try {
            List<Future<T>> futures = new ArrayList<>();
            for (int r = 0; r < worldSize; r++) {
                int rank = r;
                futures.add(pool.submit(() -> {
                    Thread.currentThread().setName("cohort-rank-" + rank);
                    CURRENT.set(new Membership(this, rank));
                    try {
                        return task.run(rank);
                    } finally {
                        CURRENT.remove();
                    }
                }));
            }
            long deadline = System.nanoTime() + limit.toNanos();
            List<T> results = new ArrayList<>();
            IllegalStateException failure = null;
            for (int r = 0; r < worldSize; r++) {
                try {
                    results.add(futures.get(r).get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS));
                } catch (ExecutionException e) {
                    failure = addFailure(
                            failure, new IllegalStateException("rank " + r + " failed: " + e.getCause(), e.getCause()));
                    results.add(null);
                } catch (TimeoutException e) {
                    failure = addFailure(
                            failure, new IllegalStateException("rank " + r + " did not finish within " + limit));
                    results.add(null);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted while waiting for the ranks", e);
                }
            }
            if (failure != null) {
                throw failure;
            }
            return results;
        } finally {
            pool.shutdownNow();
        }
    }

    private static IllegalStateException addFailure(IllegalStateException first, IllegalStateException next) {
        if (first == null) {
            return next;
        }
        first.addSuppressed(next);
        return first;
    }

    private int nodeSize(int node) {
        return Math.min(localWorldSize, worldSize - node * localWorldSize);
    }

    private int checkRank(int rank) {
        if (rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException("rank must be in [0, " + worldSize + "), got " + rank);
        }
        return rank;
    }
}
