package dev.cohort.tcp;

import dev.cohort.runtime.store.StoreMeetingBackend;

/**
 * The tcp backend's command-line options, each with its default. {@code --tcp-interface}
 * defaults to the {@code COHORT_TCP_IFNAME} environment variable, else the interface that
 * reaches {@code MASTER_ADDR}.
 */
public final class TcpOptions extends StoreMeetingBackend.Options<TcpOptions> {

    /** The variable naming the interface the ranks listen on for each other. */
    public static final String ENV_INTERFACE = "COHORT_TCP_IFNAME";

    public TcpOptions() {
        super(
                "tcp",
                ENV_INTERFACE,
                "Network interface the ranks listen on for each other (default: " + ENV_INTERFACE
                        + ", else the interface that reaches MASTER_ADDR).");
    }
}
