package dev.cohort.shm;

import dev.cohort.api.Connection;
import dev.cohort.api.JobLayout;
import dev.cohort.runtime.EngineBackend;
import dev.cohort.runtime.JdkNeed;
import dev.cohort.runtime.SharedMemoryFiles;
import java.nio.file.Files;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The {@code shm} backend: collectives between the worker processes of one host through a shared
 * {@code /dev/shm} mapping, with float32 reductions on the Vector API where the JVM has its
 * module ({@link #VECTOR_FLAG}, which launchers give workers) and on plain loops otherwise. All
 * ranks must run on one host ({@code LOCAL_WORLD_SIZE == WORLD_SIZE}); use {@code gloo} across hosts.
 *
 * <p>Rendezvous needs only the launch environment's ranks and run id ({@code RANK},
 * {@code WORLD_SIZE}, {@code LOCAL_RANK}, {@code LOCAL_WORLD_SIZE}, {@code GROUP_RANK},
 * {@code COHORT_RUN_ID}, {@code COHORT_RESTART_COUNT}, and {@code MASTER_PORT} when set, to keep
 * two jobs apart).
 *
 * <p>This class is compiled for Java 17 so that {@link java.util.ServiceLoader} can load it on
 * every JDK Cohort supports; it loads the engine ({@code ShmEngine}, JDK 22+) only when
 * {@link #isAvailable()}, and otherwise says what is missing.
 */
public final class ShmBackend extends EngineBackend<ShmOptions> {

    public static final String NAME = "shm";
    /** The first JDK whose foreign-memory API is final. */
    public static final int MIN_JDK = 22;
    /**
     * The JVM option that gives the engine's two-rank float32 sums the Vector API; without it they
     * run on plain loops (slower on large buffers: docs/ENGINES.md).
     */
    public static final String VECTOR_FLAG = "--add-modules jdk.incubator.vector";
    /**
     * The foreign-memory API (final in JDK 22), and the Vector API module for the fastest
     * reductions ({@link #VECTOR_FLAG} as one word, as launchers pass it to workers).
     */
    public static final JdkNeed JDK = new JdkNeed(
            MIN_JDK, "no foreign-memory API for shared memory", List.of("--add-modules=jdk.incubator.vector"));

    public ShmBackend() {
        this(new ShmOptions().fromSettings(), null);
    }

    /**
     * With these options, in {@code environment}: {@code System.getenv()}, or a launch environment
     * of a program's own making (one that starts ranks itself).
     */
    public ShmBackend(ShmOptions options, Map<String, String> environment) {
        super(NAME, JDK, options, environment);
    }

    /** All workers on one host: the fastest engine there. */
    @Override
    public Optional<AutoFit> autoFit(JobLayout layout) {
        return layout.oneHost()
                ? Optional.of(new AutoFit(30, "all " + layout.worldSize() + " workers on one host: shared memory"))
                : Optional.empty();
    }

    @Override
    protected String missing() {
        int feature = Runtime.version().feature();
        if (feature < MIN_JDK) {
            return "the shm engine needs JDK " + MIN_JDK + " or newer (foreign-memory API)"
                    + "; this JVM is " + Runtime.version() + " (" + System.getProperty("java.home")
                    + "); run on a newer JDK or use --distributed-backend gloo (tcp in a program that uses DJL, whose "
                    + "libtorch cannot share a process with gloo's)";
        }
        if (!Files.isDirectory(SharedMemoryFiles.DIRECTORY)) {
            return "the shm engine needs " + SharedMemoryFiles.DIRECTORY
                    + " (a tmpfs, as on Linux); use --distributed-backend gloo "
                    + "(tcp in a program that uses DJL, whose libtorch cannot share a process with gloo's)";
        }
        return null;
    }

    @Override
    protected Connection connect() {
        return connectLoaded("dev.cohort.shm.ShmEngine", ShmOptions.class);
    }
}
