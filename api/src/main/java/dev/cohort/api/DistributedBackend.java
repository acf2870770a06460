package dev.cohort.api;

import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.collective.ReduceOp;
import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;

/**
 * The contract a training program is written against, whatever engine runs underneath (the
 * {@code DistributedBackend} of DALLE-pytorch, in Java). A program asks how many workers there
 * are and which one it is, waits for the others, wraps its model, optimizer, data and scheduler
 * for distribution, and averages values across workers.
 *
 * <p>Life cycle: construct (usually through {@link Backends}), {@link #initialize()}, use,
 * {@link #close()}. Every method except {@link #name()}, {@link #isAvailable()},
 * {@link #unavailableReason()}, {@link #commandLineOptions()}, {@code initialize} and
 * {@code close} requires an initialized, open backend and otherwise throws
 * {@link IllegalStateException} naming the backend.
 *
 * <p>Engines implement {@link #connect()} (the seed's {@code _initialize}); everything else is
 * derived from the {@link Connection} it returns, so all engines behave alike.
 */
public abstract class DistributedBackend implements BackendProvider, AutoCloseable {

    /** The rank of the root worker. */
    public static final int ROOT_RANK = 0;

    private volatile Connection connection;
    private volatile boolean closed;
    /** The open join scope, or null. */
    private volatile Join join;

    /** The backend's name, as chosen with {@code --distributed-backend} (lower case). */
    @Override
    public abstract String name();

    /**
     * Whether the engine's classes and native libraries load here. Never throws. True unless the
     * engine overrides it: pure-Java engines always run.
     */
    @Override
    public boolean isAvailable() {
        return true;
    }

    /** When {@link #isAvailable()} is false: what is missing and how to get it. */
    @Override
    public String unavailableReason() {
        return "";
    }

    /**
     * This backend's command-line options, added as a mixin by cohort-cli's
     * {@code BackendOptions.add}: an object with picocli {@code @Option} fields, or a picocli
     * {@code CommandSpec} bound to one; {@code null} when it has none. The object bound is the one
     * {@link #connect()} consults, so options parsed into it take effect.
     */
    public Object commandLineOptions() {
        return null;
    }

    /**
     * Throws {@link IllegalArgumentException} naming a setting of this backend's options that cannot
     * be taken (from the environment or a configuration file: {@link OptionSettings}); called by
     * {@link #initialize()} before it connects. Nothing by default.
     */
    protected void checkSettings() {}

    /** Joins the group of workers: the seed's {@code _initialize}. Called once. */
    protected abstract Connection connect();

    /**
     * Joins the group of workers. Idempotent: later calls return at once.
     *
     * @throws BackendUnavailableException if the engine cannot run here
     * @throws IllegalStateException       after {@link #close()}
     */
    public final synchronized void initialize() {
        if (closed) {
            throw new IllegalStateException("the " + name() + " backend is closed; create a new one");
        }
        if (connection != null) {
            return;
        }
        if (!isAvailable()) {
            throw new BackendUnavailableException(
                    "the " + name() + " backend is not available: " + unavailableReason());
        }
        checkSettings();
        prepareIntegrations();
        Connection made = connect();
        try {
            connection = joined(made);
        } catch (RuntimeException | Error e) {
            try {
                made.close();
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
        JoinRecord.record(System.getenv());
    }

    /**
     * Called once {@link #connect()} returned, before the connection is used: an engine's runtime
     * sets up what every engine shares (the flight record, observers) and returns the connection to
     * use, which may close more. Throwing closes the connection.
     */
    protected Connection joined(Connection connection) {
        return connection;
    }

    /** {@link Distributor#prepare()} of every integration on the class path, once per process. */
    private static void prepareIntegrations() {
        synchronized (DistributedBackend.class) {
            if (integrationsPrepared) {
                return;
            }
            for (Distributor d : ServiceLoader.load(Distributor.class)) {
                d.prepare();
            }
            integrationsPrepared = true;
        }
    }

    private static boolean integrationsPrepared;

    public final boolean isInitialized() {
        return connection != null && !closed;
    }

    /** The number of workers. */
    public final int worldSize() {
        return connection().topology().worldSize();
    }

    /** This worker's global rank, {@code 0 <= rank < worldSize}. */
    public final int rank() {
        return connection().topology().rank();
    }

    /** This worker's rank among the workers of its node. */
    public final int localRank() {
        return connection().topology().localRank();
    }

    /** The number of workers on this worker's node. */
    public final int localWorldSize() {
        return connection().topology().localWorldSize();
    }

    /** The index of this worker's node. */
    public final int nodeRank() {
        return connection().topology().nodeRank();
    }

    public final Topology topology() {
        return connection().topology();
    }

    public final boolean isRootWorker() {
        return rank() == ROOT_RANK;
    }

    public final boolean isLocalRootWorker() {
        return localRank() == ROOT_RANK;
    }

    /** The group of all workers, for collectives beyond the contract's. */
    public final ProcessGroup group() {
        return connection().world();
    }

    /** The group of the workers on this worker's node (its ranks are local ranks). */
    public final ProcessGroup nodeGroup() {
        return connection().node();
    }

    /** Waits until every worker on this node has called it (not the other nodes' workers). */
    public final void localBarrier() {
        connection().node().barrier().await();
    }

    /** Waits until every worker has called it. */
    public final void barrier() {
        connection().world().barrier().await();
    }

    /**
     * Checks that a batch can be split among the workers. {@code globalBatchSize} is the
     * <em>global</em> batch: the number of samples of one step summed over all workers (with
     * {@code b} samples per worker, pass {@code b * worldSize()}). The rule: at least one sample
     * per worker. Backends may override it.
     *
     * @throws IllegalArgumentException when the batch is smaller than the number of workers
     */
    public void checkBatchSize(int globalBatchSize) {
        int world = worldSize();
        if (globalBatchSize < world) {
            throw new IllegalArgumentException(
                    "batch size can't be smaller than the number of workers (" + globalBatchSize + " < " + world + ")");
        }
    }

    /**
     * Wraps a model, optimizer, training data and scheduler for distributed training. The wrapping
     * comes from the framework integration on the class path that supports the model (a
     * {@link Distributor}); with one worker, or with nothing to wrap, the inputs come back unchanged.
     *
     * @throws IllegalArgumentException when several workers train a model no integration supports
     */
    public <M, O, D, S> Distributed<M, O, D, S> distribute(DistributeRequest<M, O, D, S> request) {
        java.util.Objects.requireNonNull(request, "request");
        connection();
        List<String> known = new ArrayList<>();
        for (Distributor d : ServiceLoader.load(Distributor.class)) {
            if (d.supports(request)) {
                return d.distribute(this, request);
            }
            known.add(d.getClass().getName());
        }
        if (worldSize() == 1 || request.model() == null) {
            return request.unchanged();
        }
        throw new IllegalArgumentException("no framework integration can distribute a model of type "
                + request.model().getClass().getName() + " (integrations found: " + known
                + "); add the module for your framework, e.g. cohort-torch for org.bytedeco.pytorch models");
    }

    /**
     * Opens a scope for training on uneven inputs ({@link Join}): every rank opens it at the same
     * point with the same participants (e.g. the torch integration's {@code DistributedOptimizer});
     * a rank that runs out of batches closes it and answers the others until all have. Inside,
     * {@link #averageAll} averages over the ranks still training.
     *
     * @throws IllegalStateException if a scope is open already
     */
    public final synchronized Join join(Join.Participant... participants) {
        if (join != null) {
            throw new IllegalStateException("a join scope is open already: close it before opening another");
        }
        join = new Join(this, group(), java.util.List.of(participants));
        return join;
    }

    /** The scope {@code ended} closed on every rank. */
    final synchronized void joinEnded(Join ended) {
        if (join == ended) {
            join = null;
        }
    }

    /** The mean of {@code value} over all workers (inside a {@link Join} scope, over those still training). */
    public final double averageAll(double value) {
        double[] one = {value};
        average(DenseBuffer.of(one));
        return one[0];
    }

    /** The element-wise mean over all workers, in a new array; {@code values} is not modified. */
    public final float[] averageAll(float[] values) {
        float[] copy = values.clone();
        average(DenseBuffer.of(copy));
        return copy;
    }

    /** The element-wise mean over all workers, in a new array; {@code values} is not modified. */
    public final double[] averageAll(double[] values) {
        double[] copy = values.clone();
        average(DenseBuffer.of(copy));
        return copy;
    }

    /**
     * The element-wise mean over all workers, in a new buffer of the same kind (direct stays
     * direct); {@code values} is not modified. Integer types are averaged with truncation.
     */
    public final DenseBuffer averageAll(DenseBuffer values) {
        DenseBuffer copy = values.copyLike();
        average(copy);
        return copy;
    }

    /** {@code data} averaged in place: over every rank, or inside a join scope over the ranks still training. */
    private void average(DenseBuffer data) {
        ProcessGroup world = connection().world();
        Join scope = join;
        if (scope == null) {
            world.allreduce(data, ReduceOp.AVG).await();
            return;
        }
        int active = scope.announceAverage(data.dataType(), data.count());
        world.allreduce(data, ReduceOp.SUM).await();
        for (int i = 0; i < data.count(); i++) {
            if (data.dataType().isFloatingPoint()) {
                data.setDouble(i, data.getDouble(i) / active);
            } else {
                data.setLong(i, data.getLong(i) / active);
            }
        }
    }

    /**
     * A new, unconnected backend of this engine with the same options, for the launch environment
     * {@code environment}: how an elastic job re-forms its group at another size in the same
     * process. Engines that cannot be re-formed so throw {@link UnsupportedOperationException}.
     */
    public DistributedBackend forEnvironment(java.util.Map<String, String> environment) {
        throw new UnsupportedOperationException("the " + name() + " backend cannot re-form its group in a running "
                + "process; elastic jobs run on tcp, gloo, shm or hier");
    }

    /** Leaves the group and releases the engine. Idempotent. */
    @Override
    public final synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (connection != null) {
            connection.close();
        }
    }

    private Connection connection() {
        Connection c = connection;
        if (closed) {
            throw new IllegalStateException("the " + name() + " backend is closed");
        }
        if (c == null) {
            throw new IllegalStateException("the " + name()
                    + " backend has not been initialized; call initialize() at the start of your program");
        }
        return c;
    }

    @Override
    public String toString() {
        Connection c = connection;
        return name() + (c == null ? " (not initialized)" : " " + c.topology());
    }
}
