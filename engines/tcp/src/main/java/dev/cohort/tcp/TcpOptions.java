package dev.cohort.tcp;

import dev.cohort.runtime.EngineOptions;
import dev.cohort.tcp.transport.PeerMesh;
import java.time.Duration;
import picocli.CommandLine.Option;

/**
 * The tcp backend's command-line options, each with its default. {@code --tcp-interface}
 * defaults to the {@code COHORT_TCP_IFNAME} environment variable, else the interface that
 * reaches {@code MASTER_ADDR}.
 */
public final class TcpOptions extends EngineOptions<TcpOptions> {

    /** The variable naming the interface the ranks listen on for each other. */
    public static final String ENV_INTERFACE = "COHORT_TCP_IFNAME";

    @Option(
            names = "--tcp-interface",
            paramLabel = "IFNAME",
            description = "Network interface the ranks listen on for each other (default: " + ENV_INTERFACE
                    + ", else the interface that reaches MASTER_ADDR).")
    String networkInterface;

    /** The help of {@code --<engine>-spin-us} for any engine whose ranks wait for each other on the peer mesh. */
    public static final String MESH_SPIN_HELP = "How long a rank waiting for its peers' data keeps polling its "
            + "connections before it sleeps until data arrives; 0 never polls (default: 50 when this host runs no more "
            + "ranks than it has CPUs, else 0: polling would take the CPU a rank needs).";

    private final Micros spin = microsOption("spin-us", MESH_SPIN_HELP);

    public TcpOptions() {
        super("tcp", Help.ofNetworkEngine("tcp"));
    }

    public TcpOptions networkInterface(String name) {
        this.networkInterface = name;
        return this;
    }

    /** Polls this long before sleeping (see --tcp-spin-us); {@link Duration#ZERO} never polls. */
    public TcpOptions spin(Duration time) {
        spin.assign(time);
        return this;
    }

    /** The polling time of a rank whose host runs {@code ranksOnThisHost} ranks: as set, else {@link PeerMesh#defaultSpin}. */
    Duration spin(int ranksOnThisHost) {
        return spin.orElse(PeerMesh.defaultSpin(ranksOnThisHost));
    }
}
