package dev.cohort.hier;

import dev.cohort.runtime.EngineOptions;
import java.time.Duration;
import java.util.Optional;
import picocli.CommandLine.Option;

/** The hier backend's command-line options, each next to its default. */
public final class HierOptions extends EngineOptions<HierOptions> {

    public HierOptions() {
        super("hier", new Help("Timeout of each collective, all its stages together (default: 300).",
                "Time for the ranks of each host, then the hosts' leaders, to meet (default: 60).",
                "A stage waiting longer than this is reported with the ranks it waits for (default: 30)."));
    }

    @Option(names = "--hier-ranks-per-host", paramLabel = "K",
            description = "Treat every K consecutive ranks as one host (to try or measure the backend on one "
                    + "machine); 0 takes the hosts from LOCAL_RANK, LOCAL_WORLD_SIZE and GROUP_RANK (default: 0).")
    int ranksPerHost;

    @Option(names = "--hier-leaders-spin-us", paramLabel = "MICROSECONDS",
            description = "How long a host's leader, waiting for the other hosts' bytes, keeps polling before it "
                    + "sleeps, as --gloo-spin-us (default: 50 where the host has a CPU for each of its ranks, else 0).")
    Integer leadersSpinMicros;

    /** Every {@code k} consecutive ranks form one simulated host; 0: the hosts of the launch environment. */
    public HierOptions ranksPerHost(int k) {
        this.ranksPerHost = nonNegative("ranks-per-host", k);
        return this;
    }

    /** The leaders poll this long before they sleep (see --hier-leaders-spin-us); zero never polls. */
    public HierOptions leadersSpin(Duration spin) {
        this.leadersSpinMicros = micros("leaders-spin-us", spin);
        return this;
    }

    /** The leaders' polling time as set, or empty: the gloo engine's default for this host. */
    public Optional<Duration> leadersSpin() {
        return Optional.ofNullable(ofMicros("leaders-spin-us", leadersSpinMicros));
    }

    public int ranksPerHost() {
        return nonNegative("ranks-per-host", ranksPerHost);
    }
}
