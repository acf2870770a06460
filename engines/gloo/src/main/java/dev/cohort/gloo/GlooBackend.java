package dev.cohort.gloo;

import dev.cohort.api.Connection;
import dev.cohort.api.JobEnvironment;
import dev.cohort.api.JobLayout;
import dev.cohort.api.LaunchEnvironment;
import dev.cohort.api.Topology;
import dev.cohort.api.collective.JoinException;
import dev.cohort.gloo.rendezvous.C10dStore;
import dev.cohort.gloo.rendezvous.Rendezvous;
import dev.cohort.libtorch.LibTorch;
import dev.cohort.runtime.GroupMeeting;
import dev.cohort.runtime.RankNames;
import dev.cohort.runtime.SubgroupMaker;
import dev.cohort.runtime.auth.JobSecret;
import dev.cohort.runtime.p2p.Directory;
import dev.cohort.runtime.p2p.PostOffice;
import dev.cohort.runtime.store.JobJoin;
import dev.cohort.runtime.store.PrefixStore;
import dev.cohort.runtime.store.StoreMeetingBackend;
import dev.cohort.runtime.store.StoreNotes;
import dev.cohort.tcp.algorithms.MeshCollectives;
import dev.cohort.tcp.transport.LocalAddress;
import dev.cohort.tcp.transport.MeshConnector;
import dev.cohort.tcp.transport.MeshSpec;
import dev.cohort.tcp.transport.PeerMesh;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import org.bytedeco.javacpp.chrono.Milliseconds;
import org.bytedeco.pytorch.GlooDeviceVector;
import org.bytedeco.pytorch.ProcessGroupGloo;
import org.bytedeco.pytorch.Store;
import org.bytedeco.pytorch.gloo.Device;

/**
 * The {@code gloo} backend: collectives on Gloo through PyTorch's c10d, across processes and
 * hosts. Joins the group described by the launch environment ({@link LaunchEnvironment}:
 * torchrun's {@code MASTER_ADDR}, {@code MASTER_PORT}, {@code RANK}, {@code WORLD_SIZE},
 * {@code LOCAL_RANK}, {@code LOCAL_WORLD_SIZE}, {@code GROUP_RANK}); rank 0 hosts the TCP store.
 * Builds two Gloo groups: the world, and the ranks of this node (for the node-local barrier); on
 * a single node they are one and the same.
 *
 * <p>Timeouts (see {@link GlooOptions}): 60 s for all ranks to meet and connect, 5 min per
 * collective by default.
 */
public final class GlooBackend extends StoreMeetingBackend<GlooOptions> {

    public static final String NAME = "gloo";
    /** PyTorch's variable naming the interface Gloo binds to. */
    public static final String ENV_INTERFACE = "GLOO_SOCKET_IFNAME";

    private static final System.Logger LOG = System.getLogger(GlooBackend.class.getName());

    /** How long a note to or from the job's store may wait for it (see {@link #notes()}). */
    static final Duration NOTES_TIMEOUT = Duration.ofSeconds(2);
    /**
     * How long rank 0, whose process hosts the store, keeps it up after a failed join, so that
     * ranks still starting learn why instead of finding no store (see {@link JobJoin}).
     */
    static final Duration LINGER = Duration.ofSeconds(10);

    private Rendezvous rendezvous;

    public GlooBackend() {
        super(NAME, new GlooOptions().fromSettings());
    }

    /**
     * With these options, in {@code environment}: {@code System.getenv()}, or a launch environment
     * of a program's own making (one that starts ranks itself); a group inside another backend
     * where {@code options} {@linkplain StoreMeetingBackend.Options#meetingAs meet as one}.
     */
    public GlooBackend(GlooOptions options, Map<String, String> environment) {
        super(NAME, options, environment);
    }

    @Override
    protected String missing() {
        return LibTorch.isLoadable() ? null : LibTorch.failureReason();
    }

    /** Any layout, across processes and hosts; below the shared-memory engines where they run. */
    @Override
    public Optional<AutoFit> autoFit(JobLayout layout) {
        return Optional.of(new AutoFit(10, workersOn(layout, "Gloo over TCP")));
    }

    @Override
    protected Connection connect() {
        LibTorch.load();
        Duration connectTimeout = options.connectTimeout();
        Duration timeout = options.timeout();
        Optional<JobSecret> secret = secret();
        Path storeFile = fileRendezvous(options.rendezvous);
        Topology topology;
        String runScope;
        Device device;
        if (storeFile != null) {
            topology = LaunchEnvironment.parseTopology(env());
            runScope = LaunchEnvironment.parseRunId(env());
            rendezvous = Rendezvous.file(storeFile, topology.worldSize(), connectTimeout);
            if (secret.isPresent() && topology.rank() == 0) {
                LOG.log(
                        System.Logger.Level.WARNING,
                        "the file rendezvous "
                                + storeFile
                                + " is not covered by the job's secret: whoever can write it takes part in the "
                                + "rendezvous (the peer mesh and messages still prove the secret)");
            }
            device = device(null, 0);
        } else {
            GroupMeeting meeting = meeting();
            topology = given();
            runScope = meeting.scope();
            device = device(meeting.address(), meeting.port());
            if (secret.isEmpty() && topology.rank() == 0) {
                JobSecret.warnIfExposed(meeting.address());
            }
            rendezvous = options.agentStore() || "1".equals(env().get(JobEnvironment.AGENT_STORE))
                    ? Rendezvous.agent(
                            meeting.address(),
                            meeting.port(),
                            topology.rank(),
                            topology.worldSize(),
                            meeting.attempt(),
                            connectTimeout,
                            secret)
                    : Rendezvous.tcp(
                            meeting.address(),
                            meeting.port(),
                            topology.rank(),
                            topology.worldSize(),
                            connectTimeout,
                            secret);
        }
        try {
            JobJoin.Members members = new JobJoin(
                            new C10dStore(rendezvous.client()),
                            rendezvous.toString(),
                            new JobJoin.Linger(LINGER, rendezvous::connectedClients))
                    .join(
                            new JobJoin.Newcomer(
                                    topology,
                                    runScope,
                                    options.joinsAs(),
                                    deviceAddress(device),
                                    "rank " + topology.rank() + " of " + topology.worldSize()),
                            System.nanoTime() + connectTimeout.toNanos(),
                            connectTimeout);
            Map<String, String> ranksByAddress = members.ranksByAddress(topology.rank());
            topology = layout(topology, members);
            Duration spin = options.spin(topology.localWorldSize());
            GlooProcessGroup world = group(
                    "gloo world",
                    rendezvous.prefixed("cohort/" + runScope + "/world"),
                    device,
                    topology.rank(),
                    topology.worldSize(),
                    timeout,
                    connectTimeout,
                    ranksByAddress,
                    spin,
                    options.rankNames());
            world.watchStalls(new StallWatch(
                    rendezvous.client().clone(),
                    "cohort/" + runScope + "/issued/",
                    topology.rank(),
                    topology.worldSize(),
                    options.stallTime(),
                    options.rankNames()));
            // On one node the node group is the world: no second Gloo group and its threads.
            GlooProcessGroup node = topology.localWorldSize() == topology.worldSize()
                    ? world
                    : group(
                            "gloo node " + topology.nodeRank(),
                            rendezvous.prefixed("cohort/" + runScope + "/node-" + topology.nodeRank()),
                            device,
                            topology.localRank(),
                            topology.localWorldSize(),
                            timeout,
                            connectTimeout,
                            ranksByAddress,
                            spin,
                            options.rankNames());
            // Subgroups: Gloo groups of their own (with their mesh), under the world's rendezvous.
            Rendezvous meeting = rendezvous;
            String under = "cohort/" + runScope + "/sub/";
            Device on = device;
            String letters = "cohort/" + runScope + "/p2p/";
            InetAddress listen = meshAddress(device);
            SubgroupMaker subgroups = (scope, spec) -> {
                GlooProcessGroup g = group(
                        "gloo " + spec.label(),
                        meeting.prefixed(under + scope),
                        on,
                        spec.rank(),
                        spec.size(),
                        spec.timeout(),
                        spec.timeout(),
                        Map.of(),
                        spin,
                        spec.names());
                g.messagesThrough(() -> new PostOffice(
                        spec.rank(),
                        spec.size(),
                        listen,
                        Directory.of(new C10dStore(meeting.prefixed(letters + scope)), ""),
                        "gloo " + scope + " rank " + spec.rank() + " of " + spec.size(),
                        spec.names(),
                        secret));
                return g;
            };
            Topology placed = topology;
            world.makesSubgroups(subgroups, "world");
            world.messagesThrough(() -> new PostOffice(
                    placed.rank(),
                    placed.worldSize(),
                    listen,
                    Directory.of(new C10dStore(meeting.prefixed(letters + "world")), ""),
                    "gloo world rank " + placed.rank() + " of " + placed.worldSize(),
                    options.rankNames(),
                    secret));
            if (node != world) {
                node.makesSubgroups(subgroups, "node-" + topology.nodeRank());
                node.messagesThrough(() -> new PostOffice(
                        placed.localRank(),
                        placed.localWorldSize(),
                        listen,
                        Directory.of(new C10dStore(meeting.prefixed(letters + "node-" + placed.nodeRank())), ""),
                        "gloo node " + placed.nodeRank() + " rank " + placed.localRank(),
                        RankNames.PLAIN,
                        secret));
            }
            org.bytedeco.pytorch.Store notesClient =
                    LibTorch.retain(rendezvous.client().clone());
            notesClient.setTimeout(new Milliseconds(NOTES_TIMEOUT.toMillis()));
            noteIn(new StoreNotes(new PrefixStore("cohort/" + runScope + "/note/", new C10dStore(notesClient))));
            Rendezvous store = rendezvous;
            return new Connection(topology, world, node, () -> {
                LibTorch.release(notesClient);
                store.close();
            });
        } catch (RuntimeException e) {
            rendezvous.close();
            throw e;
        }
    }

    private GlooProcessGroup group(
            String label,
            Store store,
            Device device,
            int rank,
            int size,
            Duration timeout,
            Duration connectTimeout,
            Map<String, String> ranksByAddress,
            Duration spin,
            RankNames names) {
        ProcessGroupGloo.Options o = ProcessGroupGloo.Options.create(new Milliseconds(connectTimeout.toMillis()));
        o.devices(new GlooDeviceVector(device));
        ProcessGroupGloo pg;
        try {
            pg = LibTorch.retain(new ProcessGroupGloo(store, rank, size, o));
        } catch (RuntimeException e) {
            throw new GlooConnectException(
                    label + " rank " + rank + " of " + size + ": could not connect to its peers within "
                            + connectTimeout + ": " + e.getMessage(),
                    e);
        }
        pg.setTimeout(new Milliseconds(timeout.toMillis()));
        PeerMesh mesh = null;
        if (options.consistencyCheck() && size > 1) {
            try {
                mesh = MeshConnector.connect(
                        new PrefixStore("peer-mesh/", new C10dStore(store)),
                        meshAddress(device),
                        new MeshSpec(
                                rank,
                                size,
                                MeshCollectives.HEADER_WORDS,
                                connectTimeout,
                                spin,
                                label + " rank " + rank + " of " + size,
                                names,
                                secret()));
            } catch (JoinException e) {
                LibTorch.release(pg);
                throw new GlooConnectException(e.getMessage(), e);
            } catch (RuntimeException e) {
                LibTorch.release(pg);
                throw e;
            }
        }
        return new GlooProcessGroup(
                pg,
                label,
                rank,
                size,
                timeout,
                ranksByAddress,
                mesh,
                options.meshRoute(size),
                names,
                options.queueOptions());
    }

    /** The interface named by option or {@code GLOO_SOCKET_IFNAME}, else the address that reaches the master. */
    private Device device(String masterAddr, int masterPort) {
        String ifname = options.networkInterface(env());
        if (ifname != null && !ifname.isBlank()) {
            try {
                if (NetworkInterface.getByName(ifname) == null) {
                    throw new IllegalArgumentException("network interface '" + ifname + "' (from "
                            + options.networkInterfaceSource()
                            + ") does not exist here; see `ip link`");
                }
            } catch (SocketException e) {
                throw new IllegalStateException("cannot list network interfaces: " + e.getMessage(), e);
            }
            return ProcessGroupGloo.createDeviceForInterface(ifname);
        }
        if (masterAddr == null) {
            return ProcessGroupGloo.createDefaultDevice();
        }
        return ProcessGroupGloo.createDeviceForHostname(
                LocalAddress.towards(masterAddr, masterPort).getHostAddress());
    }

    /** The address Gloo's device listens on, where the signature mesh listens too. */
    private static InetAddress meshAddress(Device device) {
        String address = deviceAddress(device);
        try {
            return InetAddress.getByName(address);
        } catch (UnknownHostException e) {
            throw new GlooConnectException(
                    "Gloo's device address '" + address + "' does not resolve: " + e.getMessage(), e);
        }
    }

    private static String deviceAddress(Device device) {
        String s = device.str().getString();
        int at = s.indexOf("addr=[");
        if (at < 0) {
            return s;
        }
        int end = s.indexOf(']', at);
        String addr = s.substring(at + 6, end);
        int colon = addr.lastIndexOf(':');
        return colon > 0 && addr.indexOf(':') == colon ? addr.substring(0, colon) : addr;
    }

    /** The shared file of a {@code file:///PATH} rendezvous, or {@code null} for {@code env://}. */
    static Path fileRendezvous(String text) {
        if (text == null || text.equals("env://") || text.equals("env")) {
            return null;
        }
        if (text.startsWith("file://") && text.length() > "file://".length()) {
            Path path = Path.of(text.substring("file://".length()));
            if (path.isAbsolute()) {
                return path;
            }
        }
        throw new IllegalArgumentException("--gloo-rendezvous '" + text + "': use env:// or file:///ABSOLUTE/PATH");
    }
}
