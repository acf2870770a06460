package dev.cohort.runtime.elastic;

import dev.cohort.api.Backends;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.JobEnvironment;
import dev.cohort.api.LaunchEnvironment;
import dev.cohort.api.collective.CollectiveException;
import dev.cohort.api.collective.CollectiveMismatchException;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.steps.TrainingSteps;
import dev.cohort.runtime.FreePorts;
import dev.cohort.runtime.auth.JobSecret;
import dev.cohort.runtime.flight.ReformEvent;
import dev.cohort.runtime.store.StoreTimeoutException;
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

    /** Set ({@code 1}) for the workers of a node that joins a running elastic job: they wait for a generation with them. */
    public static final String ENV_JOIN = "COHORT_ELASTIC_JOIN";
    /** How long a joining worker waits for the members to take it in (at their next boundary) at the least. */
    static final Duration JOIN_PATIENCE = Duration.ofMinutes(10);

    /** Where generation 0's rank 0 posts its engine's name, for joiners. */
    private static String engineKey(int round) {
        return "elastic/" + round + "/engine";
    }

    /** Where a joining worker says it waits, so the members move only once it can connect at once. */
    private static String readyKey(int round, String worker) {
        return "elastic/" + round + "/ready/" + worker;
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
    private boolean joined;

    private ElasticJob(
            DistributedBackend backend, Map<String, String> launch, TcpStore store, String worker, Duration patience) {
        this.backend = backend;
        this.launch = launch;
        this.store = store;
        this.worker = worker;
        this.round = store == null ? 0 : LaunchEnvironment.parseRestartCount(launch);
        this.patience = patience;
    }

    /**
     * The elastic job of this process, on {@code backend} (initialized here when it is not yet).
     * {@code patience} bounds how long {@link #reform} waits for the launcher's next generation
     * and for the new group to connect. A worker of a node that joins a running job
     * ({@value #ENV_JOIN}) waits here, up to {@code patience} or 10 minutes if longer, until the
     * members take it in at their next boundary ({@link #admitWaitingWorkers}); it runs the
     * members' engine, and {@link #joined()} is then true.
     */
    public static ElasticJob of(DistributedBackend backend, Duration patience) {
        Map<String, String> launch = JobEnvironment.currentVariables();
        String at = launch.get(ENV_STORE);
        TcpStore store = null;
        if (at != null) {
            int colon = at.lastIndexOf(':');
            if (colon < 0
                    || !at.substring(colon + 1).matches("[0-9]{1,5}")
                    || launch.get(LaunchEnvironment.RANK) == null) {
                throw new IllegalArgumentException(
                        ENV_STORE + "='" + at + "' is not the address of an elastic launch's "
                                + "store, or RANK is missing: cohort run --elastic sets both");
            }
            store = TcpStore.connect(
                    at.substring(0, colon),
                    Integer.parseInt(at.substring(colon + 1)),
                    System.nanoTime() + patience.toNanos(),
                    patience,
                    JobSecret.from(launch));
        }
        // A worker is known across generations by its global rank in generation 0 (a joiner: the one it was given).
        ElasticJob job = new ElasticJob(backend, launch, store, launch.get(LaunchEnvironment.RANK), patience);
        if (store != null && "1".equals(launch.get(ENV_JOIN))) {
            job.join();
            return job;
        }
        if (!backend.isInitialized()) {
            backend.initialize();
        }
        if (store != null && backend.rank() == 0) {
            store.set(engineKey(job.round), backend.name());
        }
        return job;
    }

    /** As a worker of a joining node: waits for the first generation that has it, on the members' engine. */
    private synchronized void join() {
        long deadline = System.nanoTime() + Math.max(patience.toNanos(), JOIN_PATIENCE.toNanos());
        try {
            store.await(List.of(engineKey(round)), deadline);
        } catch (RuntimeException e) {
            throw new IllegalStateException("worker " + worker + ": the elastic job it joins never said its engine", e);
        }
        String engine = store.get(engineKey(round)).trim();
        if (!engine.equals(backend.name())) {
            backend = Backends.select(engine, Backends.discover(), launch);
        }
        joined = true;
        store.set(readyKey(round, worker), "1");
        connect(1, deadline, "joining", null, true);
    }

    /** Whether this worker joined a running job: it takes the members' state before it trains. */
    public boolean joined() {
        return joined;
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
     * @throws RuntimeException {@code failure} itself when the job is not elastic, or when no
     *     {@link CollectiveException} caused it: a failure of this worker's own (a bug, bad data)
     *     ends this worker, and the launcher re-forms the others without it, at once, instead of
     *     every worker waiting for a generation that comes only once this one has gone; ranks that
     *     disagreed on a call ({@link CollectiveMismatchException}) fail too
     * @throws IllegalStateException when no generation that has this worker comes in time
     */
    public synchronized DistributedBackend reform(RuntimeException failure) {
        return reform(failure, () -> {});
    }

    /**
     * As {@link #reform(RuntimeException)}, running {@code release} first, while the failed
     * generation's backend is still open: what lives in its memory (e.g. gradient buckets in shm's
     * arena) must be let go of before it closes.
     */
    public synchronized DistributedBackend reform(RuntimeException failure, Runnable release) {
        if (store == null || !fromACollective(failure)) {
            throw failure;
        }
        return nextGeneration(failure.getMessage(), failure, release);
    }

    /**
     * Whether a collective's failure is among {@code failure}'s causes, other than ranks that
     * disagreed on a call (a mismatch is the program's, and a new group would meet it again).
     */
    private static boolean fromACollective(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof CollectiveMismatchException) {
                return false;
            }
            if (t instanceof CollectiveException) {
                return true;
            }
        }
        return false;
    }

    /**
     * Leaves the current generation ({@code release}, then its backend closes) and connects to the
     * next one that has this worker, within {@code patience}; {@code why} and {@code failure} say
     * what moved it, for messages.
     */
    private DistributedBackend nextGeneration(String why, RuntimeException failure, Runnable release) {
        long deadline = System.nanoTime() + patience.toNanos();
        ReformEvent event = new ReformEvent();
        event.begin();
        int from = generation;
        release.run();
        closeQuietly(backend);
        DistributedBackend next = connect(generation + 1, deadline, why, failure, false);
        event.from = from;
        event.to = generation;
        event.why = why;
        event.commit();
        TrainingSteps.reformed(generation);
        return next;
    }

    /**
     * At a point every member of the current generation reaches at the same step (an epoch
     * boundary, or every K steps): when the launcher has published a newer generation (workers of a
     * joining node wait in it), moves every member there, as {@link #reform} does, and returns
     * true; the caller then hands the new members the state (the root's, as after a reform).
     * Returns false, changing nothing, otherwise and outside an elastic launch. Collective: every
     * member calls it at the same point (the root decides, for all).
     */
    public synchronized boolean admitWaitingWorkers(Runnable release) {
        if (store == null) {
            return false;
        }
        long[] newest = {0};
        if (backend.rank() == 0 && store.check(latestKey(round))) {
            int latest = Integer.parseInt(store.get(latestKey(round)).trim());
            if (latest > generation && joinersReady(latest)) {
                newest[0] = latest;
            }
        }
        backend.group().broadcast(DenseBuffer.of(newest), 0).await();
        if (newest[0] <= generation) {
            return false;
        }
        nextGeneration("workers waiting to join", null, release);
        return true;
    }

    /** Whether every worker of generation {@code latest} that is not a member now waits, ready to connect. */
    private boolean joinersReady(int latest) {
        List<String> now = generation == 0
                ? null
                : Generation.parse(store.get(generationKey(round, generation))).ranks();
        int world = backend.worldSize();
        for (String id :
                Generation.parse(store.get(generationKey(round, latest))).ranks()) {
            boolean member = now == null ? Integer.parseInt(id) < world : now.contains(id);
            if (!member && !store.check(readyKey(round, id))) {
                return false;
            }
        }
        return true;
    }

    /**
     * Connects this worker in the newest generation at least {@code atLeast} that has it (taking
     * the next one when a generation cannot connect), until {@code deadline}. A member missing from
     * a generation was counted lost; a joiner waits for one that has it.
     */
    private DistributedBackend connect(
            int atLeast, long deadline, String after, RuntimeException cause, boolean joining) {
        RuntimeException last = cause;
        int want = atLeast;
        while (System.nanoTime() < deadline) {
            int next = awaitGeneration(want, deadline, after, cause);
            Generation g = Generation.parse(store.get(generationKey(round, next)));
            int rank = g.ranks().indexOf(worker);
            generation = next;
            want = next + 1;
            if (rank < 0) {
                if (joining) {
                    continue;
                }
                throw new IllegalStateException("worker " + worker + " is not in generation " + next + " " + g.ranks()
                        + " of this elastic job: the launcher counted it as lost");
            }
            DistributedBackend fresh = null;
            try {
                long started = System.nanoTime();
                fresh = backend.forEnvironment(environment(g, rank, masterPort(g, rank, next, deadline)));
                fresh.initialize();
                backend = fresh;
                LOG.log(
                        System.Logger.Level.INFO,
                        "worker " + worker + ": generation " + next + " formed in "
                                + (System.nanoTime() - started) / 1_000_000 + " ms: rank " + rank + " of "
                                + g.ranks().size()
                                + " (after: " + after + ")");
                return fresh;
            } catch (RuntimeException e) {
                if (fresh != null) {
                    closeQuietly(fresh);
                }
                last = e;
            }
        }
        throw new IllegalStateException(
                "worker " + worker + ": no generation of this elastic job formed in time after: " + after
                        + (last == null ? "" : " (last: " + last.getMessage() + ")"),
                cause);
    }

    /** The number of the newest generation at least {@code atLeast}, once the launcher published it. */
    private int awaitGeneration(int atLeast, long deadline, String after, RuntimeException cause) {
        try {
            // The launcher sets a generation's key before the latest number.
            store.await(List.of(generationKey(round, atLeast), latestKey(round)), deadline);
        } catch (RuntimeException e) {
            throw new IllegalStateException(
                    "worker " + worker + ": the launcher published no generation " + atLeast
                            + " of this elastic job in time after: " + after
                            + " (fewer workers left than --elastic allows, or the launcher is gone)",
                    cause);
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
        // Rank 0 posts it once it moved here: a joiner may wait long (until the members' boundary),
        // and moves on when a newer generation (a loss meanwhile) replaces this one.
        while (true) {
            try {
                store.await(List.of(key), Math.min(deadline, System.nanoTime() + 1_000_000_000L));
                return Integer.parseInt(store.get(key).trim());
            } catch (StoreTimeoutException e) {
                if (System.nanoTime() - deadline >= 0) {
                    throw e;
                }
                if (Integer.parseInt(store.get(latestKey(round)).trim()) > next) {
                    throw new IllegalStateException("generation " + next + " was replaced before its rank 0 came", e);
                }
            }
        }
    }

    private static int freePort(String host) {
        try {
            return FreePorts.pick(java.net.InetAddress.getByName(host));
        } catch (java.io.IOException | IllegalStateException e) {
            throw new IllegalStateException(
                    "cannot find a free port on " + host + " for the new generation's rank 0: " + e.getMessage(), e);
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
