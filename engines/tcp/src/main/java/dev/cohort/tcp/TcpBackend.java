package dev.cohort.tcp;

import dev.cohort.api.Connection;
import dev.cohort.api.JobLayout;
import dev.cohort.api.LaunchEnvironment;
import dev.cohort.api.Topology;
import dev.cohort.api.collective.JoinException;
import dev.cohort.runtime.EngineBackend;
import dev.cohort.runtime.HostIdentity;
import dev.cohort.runtime.RankNames;
import dev.cohort.runtime.SubgroupMaker;
import dev.cohort.runtime.auth.JobSecret;
import dev.cohort.runtime.p2p.Directory;
import dev.cohort.runtime.p2p.PostOffice;
import dev.cohort.runtime.store.JobNotes;
import dev.cohort.runtime.store.PrefixStore;
import dev.cohort.runtime.store.Store;
import dev.cohort.runtime.store.StoreNotes;
import dev.cohort.runtime.store.TcpStore;
import dev.cohort.runtime.store.TcpStoreServer;
import dev.cohort.tcp.algorithms.MeshCollectives;
import dev.cohort.tcp.transport.LocalAddress;
import dev.cohort.tcp.transport.PeerMesh;
import java.net.InetAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * The {@code tcp} backend: collectives over Cohort's own full mesh of TCP connections, in Java
 * alone: no native library is loaded, so it runs beside any other native framework in the JVM
 * (DJL's PyTorch engine, which cannot share a process with a second libtorch). Joins the group the
 * launch environment describes ({@code MASTER_ADDR}, {@code MASTER_PORT}, {@code RANK},
 * {@code WORLD_SIZE}, and where known {@code LOCAL_RANK}, {@code LOCAL_WORLD_SIZE},
 * {@code GROUP_RANK}); rank 0 hosts the job's store ({@link TcpStoreServer}) on
 * {@code MASTER_PORT}.
 *
 * <p>Joining: every rank announces its host and engine in the store, so ranks that run another
 * engine or another world size, or two processes that claim one rank, fail at once naming each
 * other; where the launcher gave no host layout it is learned from the announcements. Each rank
 * then connects to every other ({@link PeerMesh}); with several hosts a second mesh joins the
 * ranks of each host (the node group).
 *
 * <p>Algorithms ({@link MeshCollectives}): each call in one step over the mesh, or for large
 * allreduces a reduce-scatter then an allgather. Timeouts (see {@link TcpOptions}): 60 s for all
 * ranks to meet and connect, 5 min per collective by default.
 */
public final class TcpBackend extends EngineBackend<TcpOptions> {

    public static final String NAME = "tcp";

    private static final System.Logger LOG = System.getLogger(TcpBackend.class.getName());

    /** How long a note to or from the job's store may wait for it (see {@link #notes()}). */
    static final Duration NOTES_TIMEOUT = Duration.ofSeconds(2);

    /** The group this backend joins when it is part of another backend; null: the launch environment's. */
    private final LaunchEnvironment group;

    private volatile JobNotes notes;

    public TcpBackend() {
        super(NAME, new TcpOptions());
        this.group = null;
    }

    /**
     * With these options, in {@code environment}: {@code System.getenv()}, or a launch environment
     * of a program's own making (one that starts ranks itself).
     */
    public TcpBackend(TcpOptions options, Map<String, String> environment) {
        super(NAME, options, environment);
        this.group = null;
    }

    private TcpBackend(TcpOptions options, LaunchEnvironment group) {
        super(NAME, options, Map.of());
        this.group = group;
    }

    /**
     * A tcp group that is part of another backend (hier's group of the hosts' leaders): its ranks
     * meet at {@code group}'s master address as {@code group}'s topology says, whatever this
     * process's own launch environment is; the layout is {@code group}'s, never learned. The
     * network interface comes from {@code options} only.
     */
    public static TcpBackend forGroup(LaunchEnvironment group, TcpOptions options) {
        return new TcpBackend(options, java.util.Objects.requireNonNull(group, "group"));
    }

    /** Needs nothing beyond the JDK. */
    @Override
    protected String missing() {
        return null;
    }

    /** The ranks meet at {@code MASTER_ADDR:MASTER_PORT} (rank 0 hosts the store there). */
    @Override
    public boolean needsRendezvousAddress() {
        return true;
    }

    /** Any layout, across processes and hosts; below gloo (measured the same or faster so far) and the shared-memory engines. */
    @Override
    public OptionalInt autoPreference(JobLayout layout) {
        return OptionalInt.of(5);
    }

    @Override
    public String autoReason(JobLayout layout) {
        return layout.worldSize() + " workers on " + (layout.oneHost() ? "one host" : layout.hostsText() + " hosts")
                + ": Cohort's TCP mesh (no native library)";
    }

    @Override
    protected Connection connect() {
        LaunchEnvironment launch = group != null ? group : LaunchEnvironment.parse(env());
        Topology given = launch.topology();
        Duration connectTimeout = options.connectTimeout();
        long deadline = System.nanoTime() + connectTimeout.toNanos();
        String scope = "cohort/" + launch.runId() + "/" + launch.restartCount() + "/";
        String who = "tcp rank " + given.rank() + " of " + given.worldSize();
        TcpStoreServer server = null;
        TcpStore client = null;
        Store store = null;
        List<AutoCloseable> opened = new ArrayList<>();
        try {
            Optional<JobSecret> secret = secret();
            if (secret.isEmpty() && given.rank() == 0) {
                JobSecret.warnIfExposed(launch.masterAddr());
            }
            server = given.rank() == 0
                    ? TcpStoreServer.start(masterAddress(launch, who), launch.masterPort(), secret)
                    : null;
            client = TcpStore.connect(launch.masterAddr(), launch.masterPort(), deadline, connectTimeout, secret);
            checkRun(client, given.rank(), scope, deadline, who);
            store = new PrefixStore(scope, client);
            List<String> hosts = join(store, given, options.joinsAs(), deadline, who);
            Topology topology = group != null ? given : layout(given, hosts, LaunchEnvironment.layoutGiven(env()), who);
            InetAddress address = listenAddress(launch);
            Duration spin = options.spin(topology.localWorldSize());
            PeerMesh worldMesh = PeerMesh.connect(
                    new PrefixStore("world/", store),
                    topology.rank(),
                    topology.worldSize(),
                    MeshCollectives.HEADER_WORDS,
                    address,
                    remaining(deadline),
                    spin,
                    who,
                    options.rankNames(),
                    secret);
            opened.add(worldMesh);
            boolean oneNode = topology.localWorldSize() == topology.worldSize();
            PeerMesh nodeMesh = oneNode
                    ? null
                    : PeerMesh.connect(
                            new PrefixStore("node-" + topology.nodeRank() + "/", store),
                            topology.localRank(),
                            topology.localWorldSize(),
                            MeshCollectives.HEADER_WORDS,
                            address,
                            remaining(deadline),
                            spin,
                            "tcp node " + topology.nodeRank() + " rank " + topology.localRank() + " of "
                                    + topology.localWorldSize(),
                            RankNames.PLAIN,
                            secret);
            // Connected: from now on the store only carries notes, each of which waits briefly.
            notes = new StoreNotes(new PrefixStore(scope + "note/", client.timeout(NOTES_TIMEOUT)));
            TcpStore storeClient = client;
            TcpStoreServer hosted = server;
            Runnable closeStore = () -> {
                storeClient.close();
                if (hosted != null) {
                    hosted.close();
                }
            };
            Store sub = new PrefixStore("sub/", store);
            Store p2p = new PrefixStore("p2p/", store);
            SubgroupMaker subgroups = (name, spec) -> {
                TcpProcessGroup g = new TcpProcessGroup(
                        "tcp " + spec.label(),
                        PeerMesh.connect(
                                new PrefixStore(name + "/", sub),
                                spec.rank(),
                                spec.size(),
                                MeshCollectives.HEADER_WORDS,
                                address,
                                spec.timeout(),
                                spin,
                                "tcp " + name + " rank " + spec.rank() + " of " + spec.size(),
                                spec.names(),
                                secret),
                        spec.rank(),
                        spec.size(),
                        spec.timeout(),
                        options.stallTime(),
                        () -> {});
                g.messagesThrough(() -> new PostOffice(
                        spec.rank(),
                        spec.size(),
                        address,
                        Directory.of(p2p, name + "/"),
                        "tcp " + name + " rank " + spec.rank() + " of " + spec.size(),
                        spec.names(),
                        secret));
                return g;
            };
            if (oneNode) {
                TcpProcessGroup world = new TcpProcessGroup(
                        "tcp world",
                        worldMesh,
                        topology.rank(),
                        topology.worldSize(),
                        options.timeout(),
                        options.stallTime(),
                        closeStore,
                        options.queueOptions());
                world.makesSubgroups(subgroups, "world");
                world.messagesThrough(() -> new PostOffice(
                        topology.rank(),
                        topology.worldSize(),
                        address,
                        Directory.of(p2p, "world/"),
                        who,
                        options.rankNames(),
                        secret));
                return new Connection(topology, world, world);
            }
            TcpProcessGroup node = new TcpProcessGroup(
                    "tcp node " + topology.nodeRank(),
                    nodeMesh,
                    topology.localRank(),
                    topology.localWorldSize(),
                    options.timeout(),
                    options.stallTime(),
                    () -> {});
            TcpProcessGroup world = new TcpProcessGroup(
                    "tcp world",
                    worldMesh,
                    topology.rank(),
                    topology.worldSize(),
                    options.timeout(),
                    options.stallTime(),
                    () -> {});
            world.makesSubgroups(subgroups, "world");
            node.makesSubgroups(subgroups, "node-" + topology.nodeRank());
            world.messagesThrough(() -> new PostOffice(
                    topology.rank(),
                    topology.worldSize(),
                    address,
                    Directory.of(p2p, "world/"),
                    who,
                    options.rankNames(),
                    secret));
            node.messagesThrough(() -> new PostOffice(
                    topology.localRank(),
                    topology.localWorldSize(),
                    address,
                    Directory.of(p2p, "node-" + topology.nodeRank() + "/"),
                    "tcp node " + topology.nodeRank() + " rank " + topology.localRank(),
                    RankNames.PLAIN,
                    secret));
            return new Connection(topology, world, node, closeStore::run);
        } catch (RuntimeException e) {
            for (AutoCloseable c : opened) {
                try {
                    c.close();
                } catch (Exception ignored) {
                    // failing anyway
                }
            }
            if (server != null && store != null && e instanceof JoinException) {
                lingerForLeavers(store, given.worldSize());
            }
            if (client != null) {
                client.close();
            }
            if (server != null) {
                server.close();
            }
            throw e instanceof JoinException
                    ? e
                    : new JoinException(who + ": could not join the job: " + e.getMessage(), e);
        }
    }

    /**
     * Rank 0 names the run it hosts the store for; the other ranks check that it is theirs, so
     * ranks of two jobs on one port are told so at once instead of waiting for each other.
     */
    private static void checkRun(Store store, int rank, String scope, long deadline, String who) {
        if (rank == 0) {
            store.set("cohort/run", scope);
            return;
        }
        store.await(List.of("cohort/run"), deadline);
        String hosted = store.get("cohort/run");
        if (!hosted.equals(scope)) {
            throw new JoinException(
                    who + ": the store at MASTER_ADDR/MASTER_PORT belongs to run '" + hosted
                            + "', this rank is of run '" + scope
                            + "' (COHORT_RUN_ID and restart count); give each job its "
                            + "own MASTER_PORT",
                    null);
        }
    }

    /** How often a rank waiting for the others to join looks for a rank that gave up. */
    private static final long JOIN_POLL_NANOS = 200_000_000;

    /**
     * Announces this rank in the store, as running {@code joinsAs}, and reads every rank's
     * announcement: each rank's host, by rank. Ranks that run something else or another
     * world size, and two processes claiming one rank, fail here naming each other: the rank that
     * finds the difference leaves its message in the store, and the others, waiting for the rest
     * to join, fail with it at once.
     */
    static List<String> join(Store store, Topology given, String joinsAs, long deadline, String who) {
        long claims = store.add("claims/" + given.rank(), 1);
        if (claims > 1) {
            throw giveUp(
                    store,
                    who + ": another process already joined as rank " + given.rank()
                            + "; give each process its own RANK (or start the job with one launcher)");
        }
        try {
            return joinOrGiveUp(store, given, joinsAs, deadline, who);
        } catch (JoinException e) {
            try {
                store.add(LEFT, 1);
            } catch (RuntimeException ignored) {
                // the store is gone: nobody waits for this count
            }
            throw e;
        }
    }

    /** Counts the ranks that gave up joining, so the rank hosting the store keeps it until they have read why. */
    private static final String LEFT = "left";

    /** The longest the rank hosting the store keeps it for ranks still to read why the join failed. */
    private static final long LINGER_NANOS = 3_000_000_000L;

    /**
     * On a failed join, the rank hosting the store keeps it up until every rank that announced
     * itself has counted itself out (so each reads the reason, not "the store is gone"), at most
     * {@link #LINGER_NANOS}.
     */
    private static void lingerForLeavers(Store store, int world) {
        long until = System.nanoTime() + LINGER_NANOS;
        try {
            while (System.nanoTime() < until) {
                int joined = 0;
                for (int r = 0; r < world; r++) {
                    if (store.check("member/" + r)) {
                        joined++;
                    }
                }
                if (store.add(LEFT, 0) >= joined) {
                    return;
                }
                Thread.sleep(20);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException ignored) {
            // closing anyway
        }
    }

    private static List<String> joinOrGiveUp(Store store, Topology given, String joinsAs, long deadline, String who) {
        int world = given.worldSize();
        store.set("member/" + given.rank(), HostIdentity.current() + "|" + joinsAs + "|" + world);
        List<String> keys = new ArrayList<>();
        for (int r = 0; r < world; r++) {
            keys.add("member/" + r);
        }
        while (true) {
            for (String key : keys) {
                if (store.check(key)) {
                    checkMember(store, key, joinsAs, world, who);
                }
            }
            if (store.check("abort")) {
                throw new JoinException(
                        who + ": gave up joining because another rank did: " + store.get("abort"), null);
            }
            long now = System.nanoTime();
            if (now >= deadline) {
                List<Integer> missing = new ArrayList<>();
                for (int r = 0; r < world; r++) {
                    if (!store.check("member/" + r)) {
                        missing.add(r);
                    }
                }
                throw new JoinException(
                        who + ": rank(s) " + missing + " did not join within the connect timeout "
                                + "(started? the same MASTER_ADDR/MASTER_PORT? the tcp backend on every rank?)",
                        null);
            }
            try {
                store.await(keys, Math.min(deadline, now + JOIN_POLL_NANOS));
                break;
            } catch (RuntimeException e) {
                if (!(e instanceof dev.cohort.runtime.store.StoreTimeoutException)) {
                    throw e;
                }
            }
        }
        List<String> hosts = new ArrayList<>();
        for (String key : keys) {
            hosts.add(checkMember(store, key, joinsAs, world, who));
        }
        return hosts;
    }

    /**
     * The job's layout: the launch environment's where it gave one (a disagreement with the ranks'
     * hosts is logged on rank 0), else the one the ranks' {@code hosts} make.
     */
    private static Topology layout(Topology given, List<String> hosts, boolean layoutGiven, String who) {
        Topology learned = Topology.ofHosts(hosts, given.rank());
        if (layoutGiven) {
            if (learned.localWorldSize() != given.localWorldSize() && given.rank() == 0) {
                LOG.log(
                        System.Logger.Level.WARNING,
                        who + ": LOCAL_WORLD_SIZE=" + given.localWorldSize()
                                + " but " + learned.localWorldSize()
                                + " rank(s) share this host; the launch environment's "
                                + "layout is used");
            }
            return given;
        }
        if (given.rank() == 0) {
            LOG.log(
                    System.Logger.Level.INFO,
                    "host layout learned at rendezvous: "
                            + hosts.stream().distinct().count() + " host(s); rank 0's holds " + learned.localWorldSize()
                            + " of the " + given.worldSize() + " ranks");
        }
        return learned;
    }

    /** The host in a rank's announcement under {@code key}; fails (and tells the others) when it joined differently. */
    private static String checkMember(Store store, String key, String joinsAs, int world, String who) {
        String[] parts = store.get(key).split("\\|");
        if (parts.length != 3 || !parts[1].equals(joinsAs)) {
            throw giveUp(
                    store,
                    who + ": " + key.replace("member/", "rank ") + " runs "
                            + (parts.length == 3
                                    ? parts[1] + " (" + parts[2] + " ranks)"
                                    : "something else ('" + store.get(key) + "')")
                            + " but this process runs " + joinsAs + " (" + world
                            + " ranks): every process of a job must run "
                            + "the same backend (name it with --distributed-backend)");
        }
        if (Integer.parseInt(parts[2]) != world) {
            throw giveUp(
                    store,
                    who + ": " + key.replace("member/", "rank ") + " was started with WORLD_SIZE=" + parts[2]
                            + " but this rank with WORLD_SIZE=" + world + "; start every rank with the same");
        }
        return parts[0];
    }

    /** Leaves {@code message} for the ranks still waiting to join, and returns the error to throw. */
    private static JoinException giveUp(Store store, String message) {
        try {
            store.set("abort", message);
        } catch (RuntimeException e) {
            // the others fail at their connect timeout instead
        }
        return new JoinException(message, null);
    }

    /**
     * Notes the ranks of this job leave each other in its store (see {@link JobNotes}); valid
     * from {@link #initialize()} until {@link #close()}.
     */
    public JobNotes notes() {
        JobNotes n = notes;
        if (n == null) {
            throw new IllegalStateException("the tcp backend is not initialized: call initialize() before notes()");
        }
        return n;
    }

    /** The interface named by option or {@link TcpOptions#ENV_INTERFACE}, else the address that reaches the master. */
    private InetAddress listenAddress(LaunchEnvironment launch) {
        String ifname =
                options.networkInterface != null ? options.networkInterface : env().get(TcpOptions.ENV_INTERFACE);
        if (ifname != null && !ifname.isBlank()) {
            return LocalAddress.ofInterface(
                    ifname, options.networkInterface != null ? "--tcp-interface" : TcpOptions.ENV_INTERFACE);
        }
        return LocalAddress.towards(launch.masterAddr(), launch.masterPort());
    }

    private static InetAddress masterAddress(LaunchEnvironment launch, String who) {
        try {
            return InetAddress.getByName(launch.masterAddr());
        } catch (java.net.UnknownHostException e) {
            throw new JoinException(
                    who + ": MASTER_ADDR='" + launch.masterAddr() + "' does not resolve: " + e.getMessage(), e);
        }
    }

    private static Duration remaining(long deadline) {
        return Duration.ofNanos(Math.max(1_000_000, deadline - System.nanoTime()));
    }
}
