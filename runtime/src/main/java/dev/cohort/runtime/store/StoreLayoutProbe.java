package dev.cohort.runtime.store;

import dev.cohort.api.LaunchEnvironment;
import dev.cohort.api.LayoutProbe;
import dev.cohort.api.Topology;
import dev.cohort.runtime.EngineOptions;
import dev.cohort.runtime.HostIdentity;
import dev.cohort.runtime.auth.JobSecret;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.IntStream;

/**
 * The {@link LayoutProbe} of Cohort's engines: the workers meet in a store of their own at
 * {@code MASTER_ADDR:MASTER_PORT}, hosted by rank 0 for this exchange only; each posts its host
 * ({@link HostIdentity}), reads everyone's and learns the layout from them ({@link
 * JobJoin#layout}, which rank 0 logs). Rank 0 closes the store once every worker has read, and the
 * others wait until it has, so the engine chosen next can host its own store on the same port
 * and nobody reaches this one by mistake. With the job's secret, both ends prove it.
 */
public final class StoreLayoutProbe implements LayoutProbe {

    private static final System.Logger LOG = System.getLogger(StoreLayoutProbe.class.getName());
    private static final String PREFIX = "cohort-layout/";

    private final Duration timeout;

    /** Waits as long as an engine waits for its peers by default ({@link EngineOptions#DEFAULT_CONNECT_TIMEOUT}). */
    public StoreLayoutProbe() {
        this(EngineOptions.DEFAULT_CONNECT_TIMEOUT);
    }

    /** Waits up to {@code timeout} for every worker. */
    public StoreLayoutProbe(Duration timeout) {
        this.timeout = timeout;
    }

    @Override
    public Map<String, String> learn(Map<String, String> env) {
        LaunchEnvironment launch = LaunchEnvironment.parse(env);
        Topology given = launch.topology();
        int rank = given.rank();
        int world = given.worldSize();
        Optional<JobSecret> secret = JobSecret.from(env);
        long deadline = System.nanoTime() + timeout.toNanos();
        TcpStoreServer server = rank == 0 ? TcpStoreServer.start(address(launch), launch.masterPort(), secret) : null;
        List<String> hosts;
        try (TcpStore store = TcpStore.connect(launch.masterAddr(), launch.masterPort(), deadline, timeout, secret)) {
            store.set(PREFIX + "host/" + rank, HostIdentity.current());
            List<String> keys = keys("host/", world);
            store.await(keys, deadline);
            hosts = keys.stream().map(store::get).toList();
            if (rank == 0) {
                store.set(PREFIX + "read/0", "1");
                store.await(keys("read/", world), deadline);
            } else {
                saidReadThenClosed(store, rank, deadline);
            }
        } finally {
            if (server != null) {
                server.close();
            }
        }
        Topology learned = JobJoin.layout(given, hosts, false, LOG);
        Map<String, String> withLayout = new HashMap<>(env);
        withLayout.put(LaunchEnvironment.LOCAL_RANK, Integer.toString(learned.localRank()));
        withLayout.put(LaunchEnvironment.LOCAL_WORLD_SIZE, Integer.toString(learned.localWorldSize()));
        withLayout.put(LaunchEnvironment.GROUP_RANK, Integer.toString(learned.nodeRank()));
        withLayout.put(LaunchEnvironment.GROUP_WORLD_SIZE, Integer.toString(new HashSet<>(hosts).size()));
        return Map.copyOf(withLayout);
    }

    private static List<String> keys(String kind, int world) {
        return IntStream.range(0, world).mapToObj(r -> PREFIX + kind + r).toList();
    }

    /**
     * Says this rank has read, then returns once rank 0 has closed the store (the connection ends);
     * throws if it has not by the deadline. Rank 0 may close it as soon as this rank's key is set,
     * before the store's answer to the set reaches this rank: a connection that ends there ends
     * the exchange too.
     */
    private static void saidReadThenClosed(TcpStore store, int rank, long deadline) {
        try {
            store.set(PREFIX + "read/" + rank, "1");
            store.await(List.of(PREFIX + "never"), deadline);
        } catch (UncheckedIOException closed) {
            return;
        }
        throw new IllegalStateException(
                "the key " + PREFIX + "never was set in the job's store: another program " + "shares MASTER_PORT");
    }

    private static InetAddress address(LaunchEnvironment launch) {
        try {
            return InetAddress.getByName(launch.masterAddr());
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException(
                    LaunchEnvironment.MASTER_ADDR + "='" + launch.masterAddr() + "' does not resolve: "
                            + e.getMessage(),
                    e);
        }
    }
}
