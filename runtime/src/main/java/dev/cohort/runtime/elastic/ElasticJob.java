package dev.cohort.runtime.elastic;

import dev.cohort.api.DistributedBackend;
import dev.cohort.api.JobEnvironment;
import dev.cohort.api.LaunchEnvironment;
import dev.cohort.runtime.auth.JobSecret;
import dev.cohort.runtime.store.TcpStore;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A worker's part in an elastic job ({@code cohort run --elastic MIN}): when a worker is lost, the
 * survivors re-form their group at the smaller size in their own processes, without a restart.
 *
 * <p>The launcher numbers the job's <em>generations</em>: generation 0 is every worker it started;
 * when workers or a whole node are lost it publishes the next, the workers still alive in their
 * old rank order, in the store node 0's launcher hosts ({@value #ENV_STORE}). A worker whose
 * collective failed calls {@link #reform}: its backend is closed, it waits for the next generation
 * and connects a new backend of the same engine there ({@link DistributedBackend#forEnvironment}),
 * its rank the index in the list, its local rank the index among the members on its node. The
 * new rank 0 picks a free port on its host and posts it beside the generation. What the training
 * loop keeps (model, optimizer, position) stays in memory; it takes the root's state and
 * re-shards its data for the new world.
 *
 * <p>Outside an elastic launch, {@link #reform} throws the failure it is given: a program written
 * for elastic runs runs unchanged under any launcher.
 */
public final class ElasticJob implements AutoCloseable {

    /** Where the launcher's generation store listens ({@code host:port}); set only for elastic runs. */
    public static final String ENV_STORE = "COHORT_ELASTIC_STORE";
    /**
     * The store's key of generation {@code generation} of round {@code round} (the restart count):
     * "{@code host rank:node,rank:node,...}", the new rank 0's host, then each member's global rank
     * in generation 0 and its node.
     */
    public static String generationKey(int round, int generation) {
        return "elastic/" + round + "/generation/" + generation;
    }

    /** The store's key of round {@code round}'s newest generation number. */
    public static String latestKey(int round) {
        return "elastic/" + round + "/latest";
    }

    /** Where the new rank 0 of a generation posts its port. */
    private static String portKey(int round, int generation) {
        return generationKey(round, generation) + "/port";
    }

    private static final System.Logger LOG = System.getLogger(ElasticJob.class.getName());

    private final Map<String, String> launch;
    private final TcpStore store;
    private final String worker;
    private final int round;
    private final Duration patience;
    private DistributedBackend backend;
    private int generation;

    private ElasticJob(DistributedBackend backend, Map<String, String> launch, TcpStore store, String worker,
                       Duration patience) {
        this.backend = backend;
        this.launch = launch;
        this.store = store;
        this.worker = worker;
        this.round = store == null ? 0 : Integer.parseInt(launch.getOrDefault(LaunchEnvironment.RESTART_COUNT, "0").trim());
        this.patience = patience;
    }

    /**
     * The elastic job of this process, on {@code backend} (initialized here when it is not yet).
     * {@code patience} bounds how long {@link #reform} waits for the launcher's next generation
     * and for the new group to connect.
     */
    public static ElasticJob of(DistributedBackend backend, Duration patience) {
        Map<String, String> launch = JobEnvironment.currentVariables();
        String at = launch.get(ENV_STORE);
        TcpStore store = null;
        if (at != null) {
            int colon = at.lastIndexOf(':');
            if (colon < 0 || !at.substring(colon + 1).matches("[0-9]{1,5}")
                    || launch.get(LaunchEnvironment.RANK) == null) {
                throw new IllegalArgumentException(ENV_STORE + "='" + at + "' is not the address of an elastic launch's "
                        + "store, or RANK is missing: cohort run --elastic sets both");
            }
            store = TcpStore.connect(at.substring(0, colon), Integer.parseInt(at.substring(colon + 1)),
                    System.nanoTime() + patience.toNanos(), patience, JobSecret.from(launch));
        }
        if (!backend.isInitialized()) {
            backend.initialize();
        }
        // A worker is known across generations by its global rank in generation 0.
        return new ElasticJob(backend, launch, store, launch.get(LaunchEnvironment.RANK), patience);
    }

    /** Whether the launcher re-forms this job's group when a worker is lost. */
    public boolean isElastic() {
        return store != null;
    }

    /** The backend of the current generation. */
    public synchronized DistributedBackend backend() {
        return backend;
    }

    /** The current generation (0: the workers the launcher started). */
    public synchronized int generation() {
        return generation;
    }

    /**
     * After a collective of the current generation failed with {@code failure}: closes its
     * backend, waits for the launcher's next generation, and returns that generation's backend,
     * connected. When the new group cannot connect (another worker was lost meanwhile), it takes
     * the generation after that, until {@code patience} has passed.
     *
     * @throws RuntimeException {@code failure} itself when the job is not elastic
     * @throws IllegalStateException when no generation that has this worker comes in time
     */
    public synchronized DistributedBackend reform(RuntimeException failure) {
        return reform(failure, () -> { });
    }

    /**
     * As {@link #reform(RuntimeException)}, running {@code release} first, while the failed
     * generation's backend is still open: what lives in its memory (e.g. gradient buckets in shm's
     * arena) must be let go of before it closes.
     */
    public synchronized DistributedBackend reform(RuntimeException failure, Runnable release) {
        if (store == null) {
            throw failure;
        }
        long deadline = System.nanoTime() + patience.toNanos();
        release.run();
        closeQuietly(backend);
        RuntimeException last = failure;
        while (System.nanoTime() < deadline) {
            int next = awaitGeneration(generation + 1, deadline, last);
            Generation g = Generation.parse(store.get(generationKey(round, next)));
            int rank = g.ranks().indexOf(worker);
            generation = next;
            if (rank < 0) {
                throw new IllegalStateException("worker " + worker + " is not in generation " + next + " " + g.ranks()
                        + " of this elastic job: the launcher counted it as lost");
            }
            DistributedBackend fresh = null;
            try {
                long started = System.nanoTime();
                fresh = backend.forEnvironment(environment(g, rank, masterPort(g, rank, next, deadline)));
                fresh.initialize();
                backend = fresh;
                LOG.log(System.Logger.Level.INFO, "worker " + worker + ": generation " + next + " formed in "
                        + (System.nanoTime() - started) / 1_000_000 + " ms: rank " + rank + " of " + g.ranks().size()
                        + " (after: " + failure.getMessage() + ")");
                return fresh;
            } catch (RuntimeException e) {
                if (fresh != null) {
                    closeQuietly(fresh);
                }
                last = e;
            }
        }
        throw new IllegalStateException("worker " + worker + ": no generation of this elastic job formed within "
                + patience + " after: " + failure.getMessage() + " (last: " + last.getMessage() + ")", failure);
    }

    /** The number of the newest generation at least {@code atLeast}, once the launcher published it. */
    private int awaitGeneration(int atLeast, long deadline, RuntimeException after) {
        try {
            // The launcher sets a generation's key before the latest number.
            store.await(List.of(generationKey(round, atLeast), latestKey(round)), deadline);
        } catch (RuntimeException e) {
            throw new IllegalStateException("worker " + worker + ": the launcher published no generation " + atLeast
                    + " of this elastic job in time after: " + after.getMessage()
                    + " (fewer workers left than --elastic allows, or the launcher is gone)", after);
        }
        return Math.max(atLeast, Integer.parseInt(store.get(latestKey(round)).trim()));
    }

    /**
     * Generation {@code next}'s master port: rank 0 picks a free one on its host and posts it; the
     * others wait for it.
     */
    private int masterPort(Generation g, int rank, int next, long deadline) {
        String key = portKey(round, next);
        if (rank == 0) {
            int port = freePort(g.masterHost());
            store.set(key, Integer.toString(port));
            return port;
        }
        store.await(List.of(key), deadline);
        return Integer.parseInt(store.get(key).trim());
    }

    private static int freePort(String host) {
        try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getByName(host))) {
            return s.getLocalPort();
        } catch (java.io.IOException e) {
            throw new IllegalStateException("cannot find a free port on " + host + " for the new generation's rank 0: "
                    + e.getMessage(), e);
        }
    }

    /** A generation as published: the new rank 0's host, the members' generation-0 ranks and their nodes. */
    record Generation(String masterHost, List<String> ranks, List<String> nodes) {

        static Generation parse(String text) {
            String[] spec = text.trim().split(" ");
            List<String> ranks = new java.util.ArrayList<>();
            List<String> nodes = new java.util.ArrayList<>();
            for (String member : spec[1].split(",")) {
                String[] rn = member.split(":");
                ranks.add(rn[0]);
                nodes.add(rn[1]);
            }
            return new Generation(spec[0], ranks, nodes);
        }
    }

    /**
     * The launch environment of member {@code rank} of {@code g} with rank 0 at {@code port}: its
     * local rank among the members on its node, its node's index among the nodes that have members.
     */
    private Map<String, String> environment(Generation g, int rank, int port) {
        Map<String, String> env = new HashMap<>(launch);
        String node = g.nodes().get(rank);
        List<String> nodes = g.nodes().stream().distinct().toList();
        int local = 0;
        int localSize = 0;
        for (int r = 0; r < g.nodes().size(); r++) {
            if (g.nodes().get(r).equals(node)) {
                local += r < rank ? 1 : 0;
                localSize++;
            }
        }
        env.put(LaunchEnvironment.MASTER_ADDR, g.masterHost());
        env.put(LaunchEnvironment.MASTER_PORT, Integer.toString(port));
        env.put(LaunchEnvironment.RANK, Integer.toString(rank));
        env.put(LaunchEnvironment.WORLD_SIZE, Integer.toString(g.ranks().size()));
        env.put(LaunchEnvironment.LOCAL_RANK, Integer.toString(local));
        env.put(LaunchEnvironment.LOCAL_WORLD_SIZE, Integer.toString(localSize));
        env.put(LaunchEnvironment.GROUP_RANK, Integer.toString(nodes.indexOf(node)));
        env.put(LaunchEnvironment.GROUP_WORLD_SIZE, Integer.toString(nodes.size()));
        String run = launch.getOrDefault(LaunchEnvironment.RUN_ID, LaunchEnvironment.DEFAULT_RUN_ID);
        String suffix = "-g" + generation;
        env.put(LaunchEnvironment.RUN_ID, run.substring(0, Math.min(run.length(), 64 - suffix.length())) + suffix);
        return env;
    }

    private static void closeQuietly(DistributedBackend b) {
        try {
            b.close();
        } catch (RuntimeException e) {
            // a broken group closes as far as it can
        }
    }

    /** Closes the current backend and the connection to the launcher's store. */
    @Override
    public synchronized void close() {
        closeQuietly(backend);
        if (store != null) {
            store.close();
        }
    }

    @Override
    public String toString() {
        return "elastic job, generation " + generation + (store == null ? " (not elastic)" : "");
    }
}
