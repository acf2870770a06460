package dev.cohort.hier;

import dev.cohort.api.Connection;
import dev.cohort.api.JobLayout;
import dev.cohort.hier.HierOptions.Between;
import dev.cohort.mpi.MpiBackend;
import dev.cohort.runtime.EngineBackend;
import dev.cohort.shm.ShmBackend;
import java.util.Map;
import java.util.Optional;

/**
 * The {@code hier} backend: shared memory ({@code shm}) among the ranks of each host, Gloo,
 * Cohort's TCP mesh ({@code tcp}) or Open MPI between hosts ({@link HierOptions#between()}: by
 * default mpi in a job mpirun started, else Gloo where libtorch can be loaded here, else tcp), one
 * leader per host (its {@code LOCAL_RANK} 0).
 * An allreduce is reduced within
 * each host, allreduced among the leaders and broadcast within each host again; the other
 * collectives are built the same way (see {@code HierProcessGroup}). On one host it is shm with
 * no leaders' group.
 *
 * <p>The hosts come from the launch environment ({@code RANK}, {@code WORLD_SIZE},
 * {@code LOCAL_RANK}, {@code LOCAL_WORLD_SIZE}, {@code GROUP_RANK}; every host runs
 * {@code LOCAL_WORLD_SIZE} ranks); the leaders meet at {@code MASTER_ADDR:MASTER_PORT}, where the
 * leader of host 0 hosts the store of the engine between hosts, so {@code MASTER_ADDR} is an
 * address of host 0, as with torchrun (with mpi between hosts, MPI joins them and no address is
 * needed).
 *
 * <p>Compiled for Java 17 like {@link ShmBackend}: it loads the engine ({@code HierEngine},
 * JDK 22+) only when {@link #isAvailable()}, and otherwise says what is missing.
 */
public final class HierBackend extends EngineBackend<HierOptions> {

    public static final String NAME = "hier";

    /**
     * With these options, in {@code environment}: {@code System.getenv()}, or a launch environment
     * of a program's own making (one that starts ranks itself).
     */
    public HierBackend(HierOptions options, Map<String, String> environment) {
        super(NAME, ShmBackend.JDK, options, environment);
    }

    /** With default options, in this process's environment (as {@link java.util.ServiceLoader} makes it). */
    public HierBackend() {
        this(new HierOptions().fromSettings(), null);
    }

    /** The hosts' leaders meet at {@code MASTER_ADDR:MASTER_PORT}, unless MPI joins them. */
    @Override
    public boolean needsRendezvousAddress() {
        try {
            return betweenHosts(options, launchVariables()) != Between.MPI;
        } catch (IllegalArgumentException e) {
            return true;
        }
    }

    /**
     * Workers on several hosts, some host holding more than one: shared memory within each, Gloo
     * or tcp among their leaders. With one worker per host there is nothing to share, and gloo (or
     * tcp) does it all.
     */
    @Override
    public Optional<AutoFit> autoFit(JobLayout layout) {
        if (!layout.sharedHosts()) {
            return Optional.empty();
        }
        String between;
        try {
            between = switch (betweenHosts(options, launchVariables())) {
                case GLOO -> "Gloo between hosts";
                case MPI -> "Open MPI between hosts";
                default -> "Cohort's TCP mesh between hosts";
            };
        } catch (IllegalArgumentException e) {
            between = e.getMessage();
        }
        return Optional.of(new AutoFit(
                20,
                layout.worldSize() + " workers on " + layout.hostsText() + " hosts: shared memory within each host, "
                        + between));
    }

    /** shm, and gloo only where {@code --hier-between gloo} names it ({@code auto} falls back to tcp). */
    @Override
    protected String missing() {
        ShmBackend shm = new ShmBackend();
        if (!shm.isAvailable()) {
            return "the hier backend uses shm within each host: " + shm.unavailableReason();
        }
        Between between;
        try {
            between = options.between();
        } catch (IllegalArgumentException e) {
            return e.getMessage();
        }
        if (between == Between.GLOO) {
            String gloo = glooMissing();
            if (gloo != null) {
                return "the hier backend was told to use gloo between hosts (--hier-between gloo), which cannot run "
                        + "here: " + gloo + "; --hier-between tcp needs no native library";
            }
        }
        if (between == Between.MPI) {
            MpiBackend mpi = new MpiBackend();
            if (!mpi.isAvailable()) {
                return "the hier backend was told to use mpi between hosts (--hier-between mpi), which cannot run "
                        + "here: " + mpi.unavailableReason();
            }
        }
        return null;
    }

    /**
     * The engine between hosts that {@code options} make here: {@code auto} is mpi in a job that
     * mpirun started ({@code launch} has Open MPI's variables) where Open MPI's library loads
     * (gloo and tcp would need a rendezvous address there), else gloo where it can run, else tcp.
     */
    static Between betweenHosts(HierOptions options, Map<String, String> launch) {
        Between between = options.between();
        if (between != Between.AUTO) {
            return between;
        }
        if (launch.containsKey("OMPI_COMM_WORLD_RANK") && new MpiBackend().isAvailable()) {
            return Between.MPI;
        }
        return glooMissing() == null ? Between.GLOO : Between.TCP;
    }

    /**
     * Why Gloo cannot run between hosts here, or null where it can. cohort-gloo (and with it
     * libtorch) is an optional dependency of hier: only {@link Gloo} touches its classes, once they
     * are known to be on the class path.
     */
    static String glooMissing() {
        try {
            Class.forName(Gloo.BACKEND, false, HierBackend.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            return "cohort-gloo is not on the class path (add the dependency dev.cohort:cohort-gloo, which brings "
                    + "libtorch)";
        }
        return Gloo.missing();
    }

    private static final class Gloo {
        static final String BACKEND = "dev.cohort.gloo.GlooBackend";

        static String missing() {
            dev.cohort.gloo.GlooBackend gloo = new dev.cohort.gloo.GlooBackend();
            return gloo.isAvailable() ? null : gloo.unavailableReason();
        }
    }

    @Override
    protected Connection connect() {
        return connectLoaded("dev.cohort.hier.HierEngine", HierOptions.class);
    }
}
