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
 * when one dies it publishes the next, the workers still alive in their old rank order, with a
 * fresh port for the new rank 0, in the store it hosts ({@value #ENV_STORE}). A worker whose
 * collective failed calls {@link #reform}: its backend is closed, it waits for the next generation
 * and connects a new backend of the same engine there ({@link DistributedBackend#forEnvironment}),
 * its rank the index in the list. What the training loop keeps (model, optimizer, position) stays
 * in memory; it takes the root's state and re-shards its data for the new world.
 *
 * <p>Outside an elastic launch, {@link #reform} throws the failure it is given: a program written
 * for elastic runs runs unchanged under any launcher.
 */
public final class ElasticJob implements AutoCloseable {

    /** Where the launcher's generation store listens ({@code host:port}); set only for elastic runs. */
    public static final String ENV_STORE = "COHORT_ELASTIC_STORE";
    /** Keys of the launcher's store: the latest generation's number, and each generation's "port id,id,...". */
    public static final String LATEST = "elastic/latest";
    public static final String GENERATION = "elastic/generation/";

    private static final System.Logger LOG = System.getLogger(ElasticJob.class.getName());

    private final Map<String, String> launch;
    private final TcpStore store;
    private final String worker;
    private final Duration patience;
    private DistributedBackend backend;
    private int generation;

    private ElasticJob(DistributedBackend backend, Map<String, String> launch, TcpStore store, String worker,
                       Duration patience) {
        this.backend = backend;
        this.launch = launch;
        this.store = store;
        this.worker = worker;
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
                    || launch.get(LaunchEnvironment.LOCAL_RANK) == null) {
                throw new IllegalArgumentException(ENV_STORE + "='" + at + "' is not the address of an elastic launch's "
                        + "store, or LOCAL_RANK is missing: cohort run --elastic sets both");
            }
            store = TcpStore.connect(at.substring(0, colon), Integer.parseInt(at.substring(colon + 1)),
                    System.nanoTime() + patience.toNanos(), patience, JobSecret.from(launch));
        }
        if (!backend.isInitialized()) {
            backend.initialize();
        }
        // A worker is known across generations by its local rank in generation 0.
        return new ElasticJob(backend, launch, store, launch.get(LaunchEnvironment.LOCAL_RANK), patience);
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
            String[] spec = store.get(GENERATION + next).split(" ");
            List<String> members = List.of(spec[1].split(","));
            int rank = members.indexOf(worker);
            generation = next;
            if (rank < 0) {
                throw new IllegalStateException("worker " + worker + " is not in generation " + next + " " + members
                        + " of this elastic job: the launcher counted it as lost");
            }
            DistributedBackend fresh = backend.forEnvironment(environment(Integer.parseInt(spec[0]), rank, members.size()));
            try {
                long started = System.nanoTime();
                fresh.initialize();
                backend = fresh;
                LOG.log(System.Logger.Level.INFO, "worker " + worker + ": generation " + next + " formed in "
                        + (System.nanoTime() - started) / 1_000_000 + " ms: rank " + rank + " of " + members.size()
                        + " (after: " + failure.getMessage() + ")");
                return fresh;
            } catch (RuntimeException e) {
                closeQuietly(fresh);
                last = e;
            }
        }
        throw new IllegalStateException("worker " + worker + ": no generation of this elastic job formed within "
                + patience + " after: " + failure.getMessage() + " (last: " + last.getMessage() + ")", failure);
    }

    /** The number of the newest generation at least {@code atLeast}, once the launcher published it. */
    private int awaitGeneration(int atLeast, long deadline, RuntimeException after) {
        try {
            store.await(List.of(GENERATION + atLeast), deadline);
        } catch (RuntimeException e) {
            throw new IllegalStateException("worker " + worker + ": the launcher published no generation " + atLeast
                    + " of this elastic job in time after: " + after.getMessage()
                    + " (fewer workers left than --elastic allows, or the launcher is gone)", after);
        }
        return Math.max(atLeast, Integer.parseInt(store.get(LATEST).trim()));
    }

    /** The launch environment of this worker in a generation of {@code size} with rank 0 at {@code port}. */
    private Map<String, String> environment(int port, int rank, int size) {
        Map<String, String> env = new HashMap<>(launch);
        env.put(LaunchEnvironment.MASTER_PORT, Integer.toString(port));
        env.put(LaunchEnvironment.RANK, Integer.toString(rank));
        env.put(LaunchEnvironment.WORLD_SIZE, Integer.toString(size));
        env.put(LaunchEnvironment.LOCAL_RANK, Integer.toString(rank));
        env.put(LaunchEnvironment.LOCAL_WORLD_SIZE, Integer.toString(size));
        env.put(LaunchEnvironment.GROUP_RANK, "0");
        env.put(LaunchEnvironment.GROUP_WORLD_SIZE, "1");
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
