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

    @Option(
            names = "--tcp-spin-us",
            paramLabel = "MICROSECONDS",
            description = "How long a rank waiting for its peers' data keeps polling its connections before it "
                    + "sleeps until data arrives; 0 never polls (default: 50 when this host runs no more ranks than "
                    + "it has CPUs, else 0: polling would take the CPU a rank needs).")
    Integer spinMicros;

    public TcpOptions() {
        super(
                "tcp",
                new Help(
                        "Timeout of each collective (default: 300).",
                        "Time for all ranks to meet and connect (default: 60).",
                        "A collective waiting longer than this is reported with the ranks it waits for "
                                + "(default: 30; it still fails only at --tcp-timeout)."));
    }

    public TcpOptions networkInterface(String name) {
        this.networkInterface = name;
        return this;
    }

    /** Polls this long before sleeping (see --tcp-spin-us); {@link Duration#ZERO} never polls. */
    public TcpOptions spin(Duration spin) {
        this.spinMicros = micros("spin-us", spin);
        return this;
    }

    /** The polling time of a rank whose host runs {@code ranksOnThisHost} ranks: as set, else {@link PeerMesh#defaultSpin}. */
    Duration spin(int ranksOnThisHost) {
        Duration set = ofMicros("spin-us", spinMicros);
        return set != null ? set : PeerMesh.defaultSpin(ranksOnThisHost);
    }
}
