package dev.cohort.hier;

import dev.cohort.runtime.EngineOptions;
import java.time.Duration;
import java.util.Locale;
import java.util.Optional;
import picocli.CommandLine.Option;

/** The hier backend's command-line options, each next to its default. */
public final class HierOptions extends EngineOptions<HierOptions> {

    /** The engine of the hosts' leaders' group, between hosts. */
    public enum Between {
        /** Gloo (libtorch's natives, loaded through JavaCPP). */
        GLOO,
        /** Cohort's TCP mesh: no native library, so beside any native framework (DJL's PyTorch). */
        TCP,
        /** Open MPI's transports, for jobs that mpirun started (JDK 22+, Open MPI's library). */
        MPI,
        /** mpi in a job mpirun started, else Gloo where it can be loaded here, else Cohort's TCP mesh. */
        AUTO;

        /** The name on the command line. */
        public String label() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    public HierOptions() {
        super(
                "hier",
                new Help(
                        "Timeout of each collective, all its stages together (default: 300).",
                        "Time for the ranks of each host, then the hosts' leaders, to meet (default: 60).",
                        "A stage waiting longer than this is reported with the ranks it waits for (default: 30)."));
    }

    @Option(
            names = "--hier-ranks-per-host",
            paramLabel = "K",
            description = "Treat every K consecutive ranks as one host (to try or measure the backend on one "
                    + "machine); 0 takes the hosts from LOCAL_RANK, LOCAL_WORLD_SIZE and GROUP_RANK (default: 0).")
    int ranksPerHost;

    @Option(
            names = "--hier-leaders-spin-us",
            paramLabel = "MICROSECONDS",
            description = "How long a host's leader, waiting for the other hosts' bytes, keeps polling before it "
                    + "sleeps, as --gloo-spin-us or --tcp-spin-us (default: 50 where the host has a CPU for each of its "
                    + "ranks, else 0).")
    Integer leadersSpinMicros;

    @Option(
            names = "--hier-between",
            paramLabel = "gloo|tcp|mpi|auto",
            description = "The engine between hosts, among the hosts' leaders: gloo, tcp (Cohort's TCP mesh, no native "
                    + "library: the choice beside DJL's PyTorch), mpi (Open MPI, in a job mpirun started: no "
                    + "rendezvous address needed), or auto: mpi where mpirun started the job and Open MPI's library "
                    + "loads, else gloo where libtorch can be loaded here, else tcp. Every host must end up with the "
                    + "same (default: auto).")
    String between = Between.AUTO.label();

    /** The engine between hosts (see --hier-between); {@link Between#AUTO} by default. */
    public HierOptions between(Between engine) {
        this.between = engine.label();
        return this;
    }

    /** The engine between hosts as set; fails naming the option for a value it does not know. */
    public Between between() {
        for (Between b : Between.values()) {
            if (b.label().equalsIgnoreCase(between.trim())) {
                return b;
            }
        }
        throw new IllegalArgumentException(
                option("between") + " must be gloo, tcp, mpi or auto, got '" + between + "'");
    }

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

    /** The leaders' polling time as set, or empty: the default of the engine between hosts for this host. */
    public Optional<Duration> leadersSpin() {
        return Optional.ofNullable(ofMicros("leaders-spin-us", leadersSpinMicros));
    }

    public int ranksPerHost() {
        return nonNegative("ranks-per-host", ranksPerHost);
    }
}
