package dev.cohort.hier;

import dev.cohort.api.Timeouts;
import java.time.Duration;
import java.util.Optional;
import picocli.CommandLine.Option;

/** The hier backend's command-line options, each next to its default. */
public final class HierOptions {

    /** Default timeout of each collective, all its stages together. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofMinutes(5);
    /** Default time for the ranks of each host, and then the hosts' leaders, to meet. */
    public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(60);
    /** Default time after which a stage's waiting collective is reported as stalled. */
    public static final Duration DEFAULT_STALL_TIME = Duration.ofSeconds(30);

    @Option(names = "--hier-timeout", paramLabel = "SECONDS",
            description = "Timeout of each collective, all its stages together (default: 300).")
    double timeoutSeconds = DEFAULT_TIMEOUT.toSeconds();

    @Option(names = "--hier-connect-timeout", paramLabel = "SECONDS",
            description = "Time for the ranks of each host, then the hosts' leaders, to meet (default: 60).")
    double connectTimeoutSeconds = DEFAULT_CONNECT_TIMEOUT.toSeconds();

    @Option(names = "--hier-stall-seconds", paramLabel = "SECONDS",
            description = "A stage waiting longer than this is reported with the ranks it waits for (default: 30).")
    double stallSeconds = DEFAULT_STALL_TIME.toSeconds();

    @Option(names = "--hier-ranks-per-host", paramLabel = "K",
            description = "Treat every K consecutive ranks as one host (to try or measure the backend on one "
                    + "machine); 0 takes the hosts from LOCAL_RANK, LOCAL_WORLD_SIZE and GROUP_RANK (default: 0).")
    int ranksPerHost;

    @Option(names = "--hier-leaders-spin-us", paramLabel = "MICROSECONDS",
            description = "How long a host's leader, waiting for the other hosts' bytes, keeps polling before it "
                    + "sleeps, as --gloo-spin-us (default: 50 where the host has a CPU for each of its ranks, else 0).")
    Integer leadersSpinMicros;

    public HierOptions timeout(Duration timeout) {
        this.timeoutSeconds = Timeouts.toSeconds("--hier-timeout", timeout);
        return this;
    }

    public HierOptions connectTimeout(Duration timeout) {
        this.connectTimeoutSeconds = Timeouts.toSeconds("--hier-connect-timeout", timeout);
        return this;
    }

    public HierOptions stallTime(Duration stall) {
        this.stallSeconds = Timeouts.toSeconds("--hier-stall-seconds", stall);
        return this;
    }

    /** Every {@code k} consecutive ranks form one simulated host; 0: the hosts of the launch environment. */
    public HierOptions ranksPerHost(int k) {
        this.ranksPerHost = k;
        ranksPerHost();
        return this;
    }

    /** The leaders poll this long before they sleep (see --hier-leaders-spin-us); zero never polls. */
    public HierOptions leadersSpin(Duration spin) {
        if (spin.isNegative()) {
            throw new IllegalArgumentException("--hier-leaders-spin-us must be >= 0, got " + spin);
        }
        this.leadersSpinMicros = Math.toIntExact(spin.toNanos() / 1000);
        return this;
    }

    /** The leaders' polling time as set, or empty: the gloo engine's default for this host. */
    public Optional<Duration> leadersSpin() {
        if (leadersSpinMicros == null) {
            return Optional.empty();
        }
        if (leadersSpinMicros < 0) {
            throw new IllegalArgumentException("--hier-leaders-spin-us must be >= 0, got " + leadersSpinMicros);
        }
        return Optional.of(Duration.ofNanos(leadersSpinMicros * 1000L));
    }

    public Duration timeout() {
        return Timeouts.ofSeconds("--hier-timeout", timeoutSeconds);
    }

    public Duration connectTimeout() {
        return Timeouts.ofSeconds("--hier-connect-timeout", connectTimeoutSeconds);
    }

    public Duration stallTime() {
        return Timeouts.ofSeconds("--hier-stall-seconds", stallSeconds);
    }

    public int ranksPerHost() {
        if (ranksPerHost < 0) {
            throw new IllegalArgumentException("--hier-ranks-per-host must be >= 0, got " + ranksPerHost);
        }
        return ranksPerHost;
    }
}
