package dev.cohort.tcp;

import dev.cohort.api.Connection;
import dev.cohort.api.JobLayout;
import dev.cohort.api.Topology;
import dev.cohort.api.collective.JoinException;
import dev.cohort.runtime.CallQueue;
import dev.cohort.runtime.GroupMeeting;
import dev.cohort.runtime.RankNames;
import dev.cohort.runtime.SubgroupMaker;
import dev.cohort.runtime.auth.JobSecret;
import dev.cohort.runtime.p2p.Directory;
import dev.cohort.runtime.p2p.PostOffice;
import dev.cohort.runtime.store.JobJoin;
import dev.cohort.runtime.store.PrefixStore;
import dev.cohort.runtime.store.Store;
import dev.cohort.runtime.store.StoreMeetingBackend;
import dev.cohort.runtime.store.StoreNotes;
import dev.cohort.runtime.store.TcpStore;
import dev.cohort.runtime.store.TcpStoreServer;
import dev.cohort.tcp.algorithms.MeshCollectives;
import dev.cohort.tcp.transport.LocalAddress;
import dev.cohort.tcp.transport.MeshConnector;
import dev.cohort.tcp.transport.MeshSpec;
import dev.cohort.tcp.transport.PeerMesh;
import java.net.InetAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The {@code tcp} backend: collectives over Cohort's own full mesh of TCP connections, in Java
 * alone: no native library is loaded, so it runs beside any other native framework in the JVM
 * (DJL's PyTorch engine, which cannot share a process with a second libtorch). Joins the group the
 * launch environment describes ({@code MASTER_ADDR}, {@code MASTER_PORT}, {@code RANK},
 * {@code WORLD_SIZE}, and where known {@code LOCAL_RANK}, {@code LOCAL_WORLD_SIZE},
 * {@code GROUP_RANK}); rank 0 hosts the job's store ({@link TcpStoreServer}) on
 * {@code MASTER_PORT}.
 *
 * <p>Joining ({@link JobJoin}): every rank announces its host and engine in the store, so ranks that
 * run another engine, world size or run, or two processes that claim one rank, fail at once naming
 * each other; where the launcher gave no host layout it is learned from the announcements. Each rank
 * then connects to every other ({@link PeerMesh}); with several hosts a second mesh joins the
 * ranks of each host (the node group).
 *
 * <p>Algorithms ({@link MeshCollectives}): each call in one step over the mesh, or for large
 * allreduces a reduce-scatter then an allgather. Timeouts (see {@link TcpOptions}): 60 s for all
 * ranks to meet and connect, 5 min per collective by default.
 */
public final class TcpBackend extends StoreMeetingBackend<TcpOptions> {

    public static final String NAME = "tcp";

    /** How long a note to or from the job's store may wait for it (see {@link #notes()}). */
    static final Duration NOTES_TIMEOUT = Duration.ofSeconds(2);

    public TcpBackend() {
        super(NAME, new TcpOptions().fromSettings());
    }

    /**
     * With these options, in {@code environment}: {@code System.getenv()}, or a launch environment
     * of a program's own making (one that starts ranks itself); a group inside another backend
     * where {@code options} {@linkplain StoreMeetingBackend.Options#meetingAs meet as one}.
     */
    public TcpBackend(TcpOptions options, Map<String, String> environment) {
        super(NAME, options, environment);
    }

    /** Any layout, across processes and hosts; below gloo (measured the same or faster so far) and the shared-memory engines. */
    @Override
    public Optional<AutoFit> autoFit(JobLayout layout) {
        return Optional.of(new AutoFit(5, workersOn(layout, "Cohort's TCP mesh (no native library)")));
    }

    @Override
    protected Connection connect() {
        GroupMeeting meeting = meeting();
        Topology given = given();
        Duration connectTimeout = options.connectTimeout();
        long deadline = System.nanoTime() + connectTimeout.toNanos();
        String scope = "cohort/" + meeting.scope() + "/";
        String who = "tcp rank " + given.rank() + " of " + given.worldSize();
        TcpStoreServer server = null;
        TcpStore client = null;
        List<AutoCloseable> opened = new ArrayList<>();
        try {
            Optional<JobSecret> secret = secret();
            if (secret.isEmpty() && given.rank() == 0) {
                JobSecret.warnIfExposed(meeting.address());
            }
            server = given.rank() == 0
                    ? TcpStoreServer.start(masterAddress(meeting, who), meeting.port(), secret)
                    : null;
            client = TcpStore.connect(meeting.address(), meeting.port(), deadline, connectTimeout, secret);
            InetAddress address = listenAddress(meeting);
            JobJoin.Members members = new JobJoin(
                            client, "the job's store at " + client.address(), new JobJoin.Linger(LINGER, () -> 0))
                    .join(
                            new JobJoin.Newcomer(
                                    given, meeting.scope(), options.joinsAs(), address.getHostAddress(), who),
                            deadline,
                            connectTimeout);
            Store store = new PrefixStore(scope, client);
            Topology topology = layout(given, members);
            Duration spin = options.spin(topology.localWorldSize());
            PeerMesh worldMesh = MeshConnector.connect(
                    new PrefixStore("world/", store),
                    address,
                    new MeshSpec(
                            topology.rank(),
                            topology.worldSize(),
                            MeshCollectives.HEADER_WORDS,
                            remaining(deadline),
                            spin,
                            who,
                            options.rankNames(),
                            secret));
            opened.add(worldMesh);
            boolean oneNode = topology.localWorldSize() == topology.worldSize();
            PeerMesh nodeMesh = oneNode
                    ? null
                    : MeshConnector.connect(
                            new PrefixStore("node-" + topology.nodeRank() + "/", store),
                            address,
                            new MeshSpec(
                                    topology.localRank(),
                                    topology.localWorldSize(),
                                    MeshCollectives.HEADER_WORDS,
                                    remaining(deadline),
                                    spin,
                                    "tcp node " + topology.nodeRank() + " rank " + topology.localRank() + " of "
                                            + topology.localWorldSize(),
                                    RankNames.PLAIN,
                                    secret));
            // Connected: from now on the store only carries notes, each of which waits briefly.
            noteIn(new StoreNotes(new PrefixStore(scope + "note/", client.timeout(NOTES_TIMEOUT))));
            TcpStore storeClient = client;
            TcpStoreServer hosted = server;
            Runnable closeStore = () -> {
                storeClient.close();
                if (hosted != null) {
                    hosted.close();
                }
            };
            Store sub = new PrefixStore("sub/", store);
            Letters letters = new Letters(address, new PrefixStore("p2p/", store), secret);
            SubgroupMaker subgroups = (name, spec) -> {
                String subWho = "tcp " + name + " rank " + spec.rank() + " of " + spec.size();
                TcpProcessGroup g = new TcpProcessGroup(
                        "tcp " + spec.label(),
                        MeshConnector.connect(
                                new PrefixStore(name + "/", sub),
                                address,
                                new MeshSpec(
                                        spec.rank(),
                                        spec.size(),
                                        MeshCollectives.HEADER_WORDS,
                                        spec.timeout(),
                                        spin,
                                        subWho,
                                        spec.names(),
                                        secret)),
                        spec.rank(),
                        spec.size(),
                        spec.timeout(),
                        options.stallTime(),
                        () -> {});
                g.messagesThrough(() -> letters.office(spec.rank(), spec.size(), name, subWho, spec.names()));
                return g;
            };
            // On one node the world's group is also the node's, and it closes the store; with
            // several, the groups are made with the default call queue (as they always were).
            TcpProcessGroup world = new TcpProcessGroup(
                    "tcp world",
                    worldMesh,
                    topology.rank(),
                    topology.worldSize(),
                    options.timeout(),
                    options.stallTime(),
                    oneNode ? closeStore : () -> {},
                    oneNode ? options.queueOptions() : new CallQueue.Options());
            world.makesSubgroups(subgroups, "world");
            Topology placed = topology;
            world.messagesThrough(
                    () -> letters.office(placed.rank(), placed.worldSize(), "world", who, options.rankNames()));
            if (oneNode) {
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
            node.makesSubgroups(subgroups, "node-" + topology.nodeRank());
            node.messagesThrough(() -> letters.office(
                    placed.localRank(),
                    placed.localWorldSize(),
                    "node-" + placed.nodeRank(),
                    "tcp node " + placed.nodeRank() + " rank " + placed.localRank(),
                    RankNames.PLAIN));
            return new Connection(topology, world, node, closeStore::run);
        } catch (RuntimeException e) {
            for (AutoCloseable c : opened) {
                try {
                    c.close();
                } catch (Exception ignored) {
                    // failing anyway
                }
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

    /** Where a group's post offices listen, and the store their directories are in. */
    private record Letters(InetAddress address, Store p2p, Optional<JobSecret> secret) {
        /** The post office of rank {@code rank} of {@code size} in the group named {@code group}. */
        PostOffice office(int rank, int size, String group, String who, RankNames names) {
            return new PostOffice(rank, size, address, Directory.of(p2p, group + "/"), who, names, secret);
        }
    }

    /** How long rank 0 keeps the store up after a failed join, for ranks still to read why (see {@link JobJoin}). */
    private static final Duration LINGER = Duration.ofSeconds(3);

    /** The interface named by option or {@link TcpOptions#ENV_INTERFACE}, else the address that reaches the master. */
    private InetAddress listenAddress(GroupMeeting meeting) {
        String ifname = options.networkInterface(env());
        if (ifname != null && !ifname.isBlank()) {
            return LocalAddress.ofInterface(ifname, options.networkInterfaceSource());
        }
        return LocalAddress.towards(meeting.address(), meeting.port());
    }

    private static InetAddress masterAddress(GroupMeeting meeting, String who) {
        try {
            return InetAddress.getByName(meeting.address());
        } catch (java.net.UnknownHostException e) {
            throw new JoinException(
                    who + ": MASTER_ADDR='" + meeting.address() + "' does not resolve: " + e.getMessage(), e);
        }
    }

    private static Duration remaining(long deadline) {
        return Duration.ofNanos(Math.max(1_000_000, deadline - System.nanoTime()));
    }
}
