package dev.cohort.gloo;

import dev.cohort.gloo.algorithms.MeshRoute;
import dev.cohort.runtime.EngineOptions;
import dev.cohort.runtime.RankNames;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import picocli.CommandLine.Option;

/**
 * The gloo backend's command-line options, each with its default. {@code --gloo-interface}
 * defaults to the {@code GLOO_SOCKET_IFNAME} environment variable, as in PyTorch.
 */
public final class GlooOptions extends EngineOptions<GlooOptions> {
    /**
     * Default time a rank waiting for its peers' data keeps polling its connections before it
     * sleeps in the kernel, where its host has a CPU for every rank. Waking from that sleep takes
     * longer than a small collective takes when the data is polled for (measured: docs/lab/PERFORMANCE-LOG.md).
     */
    public static final Duration DEFAULT_SPIN = Duration.ofNanos(50_000);

    @Option(names = "--gloo-interface", paramLabel = "IFNAME",
            description = "Network interface Gloo binds to (default: GLOO_SOCKET_IFNAME, else the interface "
                    + "that reaches MASTER_ADDR).")
    String networkInterface;

    @Option(names = "--gloo-consistency-check", negatable = true, defaultValue = "true", fallbackValue = "true",
            description = "Before each collective the ranks compare what they call (operation, type, length, "
                    + "reduce op, root, order) and all fail naming the difference instead of hanging or "
                    + "returning wrong data (default: on; --no-gloo-consistency-check only to measure its cost).")
    boolean consistencyCheck = true;

    @Option(names = "--gloo-direct-max-bytes", paramLabel = "BYTES",
            description = "Collectives up to this size (the output's for allgather) travel over Cohort's own peer "
                    + "connections (one pipelined message each way) instead of through Gloo; 0 sends all through Gloo; needs "
                    + "the consistency check, and the same value on every rank (default: allgather, allgatherv, "
                    + "reduce-scatter and barrier always; allreduce and broadcast always with 2 ranks, else up to "
                    + MeshRoute.WHOLE_MAX_BYTES + ").")
    int meshMaxBytes = (int) MeshRoute.MEASURED;

    @Option(names = "--gloo-spin-us", paramLabel = "MICROSECONDS",
            description = "How long a rank waiting for its peers' data keeps polling its connections before it "
                    + "sleeps until data arrives; 0 never polls (default: 50 when this host runs no more ranks than "
                    + "it has CPUs, else 0: polling would take the CPU a rank needs).")
    Integer spinMicros;

    private boolean agentStore;

    @Option(names = "--gloo-rendezvous", paramLabel = "URI",
            description = "env:// (MASTER_ADDR/MASTER_PORT, rank 0 hosts a TCP store; the default) or "
                    + "file:///PATH (a file on a filesystem all ranks share).")
    String rendezvous = "env://";

    /** What this process runs, as the other ranks see it when they meet (see {@link dev.cohort.gloo.rendezvous.Membership}). */
    private String joinsAs = "the gloo backend";
    private RankNames rankNames = RankNames.PLAIN;

    public GlooOptions() {
        super("gloo", new Help("Timeout of each collective (default: 300).",
                "Time for all ranks to meet and connect (default: 60).",
                "A collective waiting longer than this is reported with the ranks that have not "
                        + "issued it yet (default: 30; it still fails only at --gloo-timeout)."));
    }

    /**
     * Names what this process runs for the rendezvous, when a Gloo group is part of another
     * backend (hier's group of host leaders): ranks that run something else are told so at once.
     */
    public GlooOptions joinsAs(String description) {
        if (description.contains("|")) {
            throw new IllegalArgumentException("joinsAs must not contain '|', got '" + description + "'");
        }
        this.joinsAs = description;
        return this;
    }

    String joinsAs() {
        return joinsAs;
    }

    /**
     * How the group's messages name its ranks, when a Gloo group is part of another backend's
     * (hier names its leaders by their global ranks); plain numbers by default.
     */
    public GlooOptions rankNames(RankNames names) {
        this.rankNames = java.util.Objects.requireNonNull(names, "names");
        return this;
    }

    RankNames rankNames() {
        return rankNames;
    }

    public GlooOptions networkInterface(String name) {
        this.networkInterface = name;
        return this;
    }

    /** Turns the always-on consistency check off (for measuring its cost; see --gloo-consistency-check). */
    public GlooOptions consistencyCheck(boolean on) {
        this.consistencyCheck = on;
        return this;
    }

    boolean consistencyCheck() {
        return consistencyCheck;
    }

    /** Collectives up to {@code bytes} go over the peer mesh; 0: all through Gloo. */
    public GlooOptions directMaxBytes(int bytes) {
        this.meshMaxBytes = nonNegative("direct-max-bytes", bytes);
        return this;
    }

    /** Which calls of a group of {@code size} ranks go over the mesh (rejects a negative --gloo-direct-max-bytes). */
    MeshRoute meshRoute(int size) {
        return new MeshRoute(meshMaxBytes, size);
    }

    /**
     * Whether the ranks meet in a store the launcher's agent hosts (torchrun's) rather than one
     * rank 0 hosts; by default as the launch environment says ({@code COHORT_AGENT_STORE}).
     */
    public GlooOptions agentStore(boolean agent) {
        this.agentStore = agent;
        return this;
    }

    boolean agentStore() {
        return agentStore;
    }

    /** Polls this long before sleeping (see --gloo-spin-us); {@link Duration#ZERO} never polls. */
    public GlooOptions spin(Duration spin) {
        this.spinMicros = micros("spin-us", spin);
        return this;
    }

    /** The polling time of a rank whose host runs {@code ranksOnThisHost} ranks: as set, else {@link #defaultSpin}. */
    Duration spin(int ranksOnThisHost) {
        Duration set = ofMicros("spin-us", spinMicros);
        return set != null ? set : defaultSpin(ranksOnThisHost);
    }

    /**
     * {@link #DEFAULT_SPIN} where the host has a CPU for each of its {@code ranksOnThisHost} ranks,
     * else none. CPUs are counted online, not in this process's affinity mask: a rank pinned to
     * one CPU of its own may poll.
     */
    public static Duration defaultSpin(int ranksOnThisHost) {
        return ranksOnThisHost <= hostCpus() ? DEFAULT_SPIN : Duration.ZERO;
    }

    /** CPUs online on this host (/sys/devices/system/cpu/online, e.g. "0-3,8"), at least this JVM's count. */
    static int hostCpus() {
        int online = 0;
        try {
            for (String range : Files.readString(Path.of("/sys/devices/system/cpu/online")).trim().split(",")) {
                String[] ends = range.split("-");
                online += ends.length == 1 ? 1 : Integer.parseInt(ends[1]) - Integer.parseInt(ends[0]) + 1;
            }
        } catch (IOException | RuntimeException e) {
            online = 0;   // not Linux, or unreadable: the JVM's count below
        }
        return Math.max(online, Runtime.getRuntime().availableProcessors());
    }

    public GlooOptions rendezvous(String uri) {
        this.rendezvous = uri;
        return this;
    }
}
