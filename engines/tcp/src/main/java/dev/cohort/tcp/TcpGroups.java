package dev.cohort.tcp;

import dev.cohort.api.LaunchEnvironment;
import dev.cohort.api.collective.JoinException;
import dev.cohort.runtime.AbstractProcessGroup;
import dev.cohort.runtime.RankNames;
import dev.cohort.runtime.auth.JobSecret;
import dev.cohort.runtime.store.InMemoryStore;
import dev.cohort.tcp.algorithms.MeshCollectives;
import dev.cohort.tcp.transport.LocalAddress;
import dev.cohort.tcp.transport.MeshConnector;
import dev.cohort.tcp.transport.MeshSpec;
import dev.cohort.tcp.transport.PeerMesh;
import java.io.IOException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.nio.channels.ServerSocketChannel;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The tcp engine's entry points for an engine that composes tcp groups into its own (hier): the
 * group of the hosts' leaders is a {@link TcpBackend} whose options {@linkplain TcpOptions#meetingAs meet as}
 * that group; a group whose ranks trade their addresses through the composing engine's own collectives joins here ({@link #listen},
 * then {@link Listening#connect}).
 */
public final class TcpGroups {

    private TcpGroups() {}

    /** How long a rank polls before it blocks, where {@code ranksOnThisHost} ranks share this host. */
    public static Duration defaultSpin(int ranksOnThisHost) {
        return PeerMesh.defaultSpin(ranksOnThisHost);
    }

    /**
     * The address other hosts reach this rank at: the interface {@code COHORT_TCP_IFNAME} names,
     * else the one that reaches {@code MASTER_ADDR}, else (under mpirun) the first IPv4 address of
     * an interface that is up and not loopback, else loopback.
     */
    public static InetAddress addressAcrossHosts(Map<String, String> env) {
        String ifname = env.get(TcpOptions.ENV_INTERFACE);
        if (ifname != null && !ifname.isBlank()) {
            return LocalAddress.ofInterface(ifname, TcpOptions.ENV_INTERFACE);
        }
        String master = env.get(LaunchEnvironment.MASTER_ADDR);
        if (master != null && !master.isBlank()) {
            return LocalAddress.towards(master, 1);
        }
        try {
            for (NetworkInterface nic : Collections.list(NetworkInterface.getNetworkInterfaces())) {
                if (nic.isUp() && !nic.isLoopback()) {
                    for (InetAddress a : Collections.list(nic.getInetAddresses())) {
                        if (a instanceof Inet4Address) {
                            return a;
                        }
                    }
                }
            }
        } catch (SocketException e) {
            // loopback below
        }
        return InetAddress.getLoopbackAddress();
    }

    /**
     * Starts joining a group of {@code size} ranks as {@code who}: listens on {@code address}; the
     * caller then trades {@link Listening#address()} with the other ranks and connects.
     */
    public static Listening listen(InetAddress address, int size, String who) {
        try {
            return new Listening(MeshConnector.listen(address, size), who);
        } catch (IOException e) {
            throw new JoinException(who + ": could not listen on " + address + ": " + e, e);
        }
    }

    /** A rank that listens for the other ranks of its group, before it connects to them. */
    public static final class Listening implements AutoCloseable {

        private final ServerSocketChannel server;
        /** This rank, as its messages name it. */
        private final String who;

        private Listening(ServerSocketChannel server, String who) {
            this.server = java.util.Objects.requireNonNull(server, "server");
            this.who = java.util.Objects.requireNonNull(who, "who");
        }

        /** Where the other ranks reach this one, as {@link #connect} takes it from them. */
        public String address() {
            return MeshConnector.addressOf(server);
        }

        /**
         * Connects rank {@code rank} to the ranks at {@code addresses} (by rank, as their
         * {@link #address()} said) within {@code timeout}, the connections proving {@code secret}:
         * a group labelled {@code label}, whose collectives time out after {@code timeout} and are
         * reported when they wait {@code stallTime}. Closes the listener, connected or not.
         */
        public AbstractProcessGroup connect(
                List<String> addresses,
                int rank,
                Duration timeout,
                Duration stallTime,
                String label,
                RankNames names,
                Optional<JobSecret> secret) {
            InMemoryStore meshAddresses = new InMemoryStore();
            for (int i = 0; i < addresses.size(); i++) {
                meshAddresses.set(Integer.toString(i), addresses.get(i));
            }
            PeerMesh mesh = MeshConnector.connect(
                    server,
                    meshAddresses,
                    new MeshSpec(
                            rank,
                            addresses.size(),
                            MeshCollectives.HEADER_WORDS,
                            timeout,
                            Duration.ZERO,
                            who,
                            names,
                            secret));
            return new TcpProcessGroup(label, mesh, rank, addresses.size(), timeout, stallTime, () -> {});
        }

        /** Stops listening (when the group is not connected after all). */
        @Override
        public void close() {
            try {
                server.close();
            } catch (IOException ignored) {
                // nothing listens any more either way
            }
        }
    }
}
