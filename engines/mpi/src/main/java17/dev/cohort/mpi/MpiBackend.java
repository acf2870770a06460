package dev.cohort.mpi;

import dev.cohort.api.Connection;
import dev.cohort.api.JobLayout;
import dev.cohort.runtime.EngineBackend;
import dev.cohort.runtime.JdkNeed;
import java.lang.reflect.InvocationTargetException;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The {@code mpi} backend: collectives through the system's Open MPI ({@code libmpi.so.40}),
 * called through Java's foreign-function API (no JNI code, no MPI Java bindings). Start the ranks
 * with {@code mpirun} (its ranks, hosts and transports: shared memory, TCP, InfiniBand, whatever
 * Open MPI finds), or with {@code cohort run --distributed-backend mpi}, which starts them through
 * {@code mpirun}. No rendezvous address is needed; {@code auto} picks this engine where no other
 * can run, as under mpirun without one.
 *
 * <p>Every collective runs as MPI's nonblocking call ({@code MPI_Iallreduce}, ...), driven until it
 * completes or its deadline passes; before it, the ranks exchange the call's signature, so ranks
 * that issued different calls fail naming each one's, and a rank that never issues it is named at
 * the deadline. MPI cannot cancel a collective: after one fails, the backend's close aborts the
 * job ({@code MPI_Abort}) rather than leave ranks waiting.
 *
 * <p>Compiled for Java 17 like the other JDK 22 engines: it loads the engine ({@code MpiEngine})
 * only when {@link #isAvailable()}, and otherwise says what is missing. MPICH's library has
 * another ABI (integer handles) and is refused by name.
 */
public final class MpiBackend extends EngineBackend<MpiOptions> {

    public static final String NAME = "mpi";
    /** The first JDK whose foreign-function API is final. */
    public static final int MIN_JDK = 22;

    /** The foreign-function API, its downcalls allowed without a warning. */
    private static final JdkNeed JDK =
            new JdkNeed(MIN_JDK, "no foreign-function API to call MPI", List.of("--enable-native-access=ALL-UNNAMED"));

    /** With these options, in {@code environment} (see {@link EngineBackend}). */
    public MpiBackend(MpiOptions options, Map<String, String> environment) {
        super(NAME, JDK, options, environment);
    }

    /** With default options, in this process's environment (as {@link java.util.ServiceLoader} makes it). */
    public MpiBackend() {
        this(new MpiOptions().fromSettings(), null);
    }

    /**
     * In a job mpirun spread over several hosts, ahead of hier (measured faster there: Open MPI's
     * own collectives against shm within each host plus Open MPI between the leaders, in
     * collectives and in training; docs/PERFORMANCE.md); elsewhere last of all, so {@code auto}
     * takes it only where no other engine runs, as under mpirun without a rendezvous address with
     * one rank per host.
     */
    @Override
    public Optional<AutoFit> autoFit(JobLayout layout) {
        if (underMpirunAcrossHosts(layout)) {
            return Optional.of(new AutoFit(
                    25,
                    layout.worldSize() + " workers on " + layout.hostsText() + " hosts, started by mpirun: Open MPI "
                            + "for every collective (measured ahead of hier across hosts)"));
        }
        return Optional.of(new AutoFit(
                1,
                layout.worldSize() + " workers and no rendezvous address (MASTER_ADDR, MASTER_PORT): Open MPI, as "
                        + "mpirun started them"));
    }

    private boolean underMpirunAcrossHosts(JobLayout layout) {
        return launchVariables().containsKey("OMPI_COMM_WORLD_RANK") && layout.known() && !layout.oneHost();
    }

    @Override
    protected String missing() {
        if (Runtime.version().feature() < MIN_JDK) {
            return "the mpi engine needs JDK " + MIN_JDK + " or newer (foreign-function API); this JVM is "
                    + Runtime.version() + " (" + System.getProperty("java.home") + ")";
        }
        try {
            return (String) Class.forName("dev.cohort.mpi.OpenMpi")
                    .getMethod("missing", String.class)
                    .invoke(null, options.library(env()));
        } catch (InvocationTargetException e) {
            return "the MPI library could not be probed: " + e.getCause();
        } catch (ReflectiveOperationException | LinkageError e) {
            return "cannot load the mpi engine: " + e;
        }
    }

    @Override
    protected Connection connect() {
        return connectLoaded("dev.cohort.mpi.MpiEngine", MpiOptions.class);
    }
}
