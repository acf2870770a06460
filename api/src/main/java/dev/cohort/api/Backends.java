package dev.cohort.api;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.TreeMap;

/**
 * Finds the backends on the class path ({@link ServiceLoader} of {@link DistributedBackend}) and
 * picks one by name, or lets {@link #auto} pick by what each engine declares
 * ({@link BackendProvider}): the seed's {@code distributed_utils}.
 *
 * <p>Command-line programs add the choice and every backend's options with cohort-cli's
 * {@code BackendOptions.add(CommandLine)}.
 */
public final class Backends {

    /** The environment variable naming the backend when no command-line option does. */
    public static final String ENV_BACKEND = "COHORT_BACKEND";
    /** The name that stands for the fastest backend that runs here (see {@link #auto}). */
    public static final String AUTO = "auto";
    /** The backend of one worker, chosen when nothing is named (the seed's Dummy; in cohort-runtime). */
    public static final String NONE = "none";
    /**
     * The oldest JDK any node of the job runs its workers on, set by {@code ./cohort run} across
     * nodes: {@link #auto} chooses by it, so that every node makes the same choice.
     */
    public static final String ENV_OLDEST_JDK = "COHORT_OLDEST_JDK";

    /** What {@value #AUTO} stands for: a backend's name, and why, for messages. */
    public record AutoChoice(String backend, String reason) {}

    /** Where a name passed to {@link #select(String)} came from, for messages. */
    public static final String FROM_PROGRAM = "the program";

    /** The Maven artifact that provides each of Cohort's engines, for "add it" messages. */
    private static final Map<String, String> ARTIFACTS = Map.of(
            "tcp",
            "dev.cohort:cohort-tcp",
            "gloo",
            "dev.cohort:cohort-gloo",
            "shm",
            "dev.cohort:cohort-shm (JDK >= 22)",
            "hier",
            "dev.cohort:cohort-hier (JDK >= 22)",
            "mpi",
            "dev.cohort:cohort-mpi (JDK >= 22)",
            "threads",
            "dev.cohort:cohort-runtime",
            NONE,
            "dev.cohort:cohort-runtime");

    private static final System.Logger LOG = System.getLogger(Backends.class.getName());

    private Backends() {}

    /** A fresh instance of every backend on the class path (cohort-runtime adds {@code none}), by lower-case name. */
    public static Map<String, DistributedBackend> discover() {
        Map<String, DistributedBackend> byName = new TreeMap<>();
        for (DistributedBackend b : ServiceLoader.load(DistributedBackend.class)) {
            byName.putIfAbsent(b.name().toLowerCase(Locale.ROOT), b);
        }
        return byName;
    }

    /** The names of the backends on the class path, and {@value #AUTO}. */
    public static List<String> names() {
        List<String> names = new ArrayList<>(discover().keySet());
        names.add(AUTO);
        return names;
    }

    /**
     * The fastest engine on the class path for workers laid out as the launch environment
     * {@code env} says, on JDK {@code jdk}: {@code none} for one worker (or no launch
     * environment); otherwise the engine whose {@link BackendProvider#autoFit} prefers it most
     * among those whose {@link BackendProvider#minimumJdk} the job's JDK meets. The JDK is the older
     * of {@code jdk} and {@value #ENV_OLDEST_JDK}, when set: every process must choose the same.
     *
     * @throws BackendUnavailableException when no engine on the class path suits the job
     */
    public static AutoChoice auto(Map<String, String> env, int jdk) {
        return auto(env, jdk, discover().values());
    }

    /** {@link #auto(Map, int)} among {@code engines}. */
    public static AutoChoice auto(Map<String, String> env, int jdk, Collection<? extends BackendProvider> engines) {
        if (!LaunchEnvironment.isPresent(env)) {
            return new AutoChoice(NONE, "no launch environment (RANK, WORLD_SIZE): one worker");
        }
        JobLayout layout = JobLayout.of(env);
        if (layout.worldSize() == 1) {
            return new AutoChoice(NONE, "one worker");
        }
        int oldest = oldestJdk(env, jdk);
        List<BackendProvider> meetable = meetable(env, engines);
        List<BackendProvider> ranked = ranked(layout, oldest, meetable);
        if (ranked.isEmpty()) {
            throw new BackendUnavailableException("backend auto: no engine on the class path runs " + layout.worldSize()
                    + " workers (found: " + names(engines) + ")"
                    + (meetable.size() < engines.size()
                            ? "; mpirun gave no MASTER_ADDR and MASTER_PORT, which the engines that meet at an address need "
                                    + "(mpirun -x MASTER_ADDR=... -x MASTER_PORT=..., or cohort-mpi)"
                            : "; add one: dev.cohort:cohort-tcp runs in any program, dev.cohort:cohort-gloo in any but one "
                                    + "that uses DJL (whose libtorch cannot share a process with gloo's)"));
        }
        BackendProvider chosen = ranked.get(0);
        List<BackendProvider> anyJdk = ranked(layout, Integer.MAX_VALUE, meetable);
        BackendProvider best = anyJdk.get(0);
        if (!layout.known()) {
            return new AutoChoice(
                    chosen.name(),
                    reason(chosen, layout) + "; the launch environment does not say which "
                            + "workers share a host (no LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK), so no engine that needs "
                            + "shared memory: set them to let auto use it");
        }
        if (best == chosen) {
            return new AutoChoice(chosen.name(), reason(chosen, layout));
        }
        String needs = "JDK >= " + best.minimumJdk();
        return new AutoChoice(
                chosen.name(),
                oldest < jdk
                        ? "a node of this job runs its workers on JDK " + oldest + ", which has " + best.olderJdksLack()
                                + ", so every node uses " + chosen.name() + "; " + needs + " on every node would use "
                                + best.name()
                        : "JDK " + jdk + " has " + best.olderJdksLack() + "; a " + needs + " would use " + best.name());
    }

    /**
     * {@code engines}, less those that meet at a rendezvous address when mpirun started the job
     * and gave none (elsewhere a missing address is the launch's error, which the engine names).
     */
    private static List<BackendProvider> meetable(
            Map<String, String> env, Collection<? extends BackendProvider> engines) {
        boolean address = !env.containsKey("OMPI_COMM_WORLD_RANK")
                || !env.getOrDefault(LaunchEnvironment.MASTER_ADDR, "").isBlank()
                        && !env.getOrDefault(LaunchEnvironment.MASTER_PORT, "").isBlank();
        List<BackendProvider> kept = new ArrayList<>();
        for (BackendProvider e : engines) {
            if (address || !e.needsRendezvousAddress()) {
                kept.add(e);
            }
        }
        return kept;
    }

    /** The engines that suit {@code layout} on JDK {@code jdk}, the most preferred first. */
    private static List<BackendProvider> ranked(
            JobLayout layout, int jdk, Collection<? extends BackendProvider> engines) {
        List<BackendProvider> fit = new ArrayList<>();
        for (BackendProvider e : engines) {
            if (e.minimumJdk() <= jdk && e.autoFit(layout).isPresent()) {
                fit.add(e);
            }
        }
        fit.sort(Comparator.comparingInt(
                        (BackendProvider e) -> e.autoFit(layout).orElseThrow().preference())
                .reversed());
        return fit;
    }

    /** Why {@code engine}, one of those that fit {@code layout}, suits it. */
    private static String reason(BackendProvider engine, JobLayout layout) {
        return engine.autoFit(layout).orElseThrow().reason();
    }

    private static String names(Collection<? extends BackendProvider> engines) {
        List<String> names = new ArrayList<>();
        for (BackendProvider e : engines) {
            names.add(e.name());
        }
        return String.join(", ", names);
    }

    private static int oldestJdk(Map<String, String> env, int jdk) {
        String text = env.get(ENV_OLDEST_JDK);
        if (text == null || text.isBlank()) {
            return jdk;
        }
        try {
            return Math.min(jdk, Integer.parseInt(text.trim()));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(ENV_OLDEST_JDK + "='" + text + "' must be a JDK feature version such "
                    + "as 17 (./cohort run sets it; unset it otherwise)");
        }
    }

    /**
     * The backend called {@code name} (case-insensitive), or {@value #AUTO}'s choice (see
     * {@link #auto}); {@code null} or blank means the {@value #ENV_BACKEND} environment variable
     * ({@code ./cohort run} sets {@value #AUTO}), and when that is unset too, {@value #AUTO} where the
     * launch environment says {@code WORLD_SIZE > 1}, else {@code none}. Naming {@code none} for a
     * world above 1 works, and rank 0 warns that every rank trains alone. The environment is
     * {@link JobEnvironment#current()}'s: torchrun's, Slurm's, Open MPI's and Kubernetes' variables work.
     *
     * @throws IllegalArgumentException     for an unknown name, listing the known ones
     * @throws BackendUnavailableException for a known backend that cannot run here
     */
    public static DistributedBackend select(String name) {
        return select(name, discover(), JobEnvironment.currentVariables());
    }

    /** {@link #select(String)} among {@code backends}, reading {@code env} instead of the process environment. */
    public static DistributedBackend select(
            String name, Map<String, DistributedBackend> backends, Map<String, String> env) {
        return select(name, FROM_PROGRAM, backends, env);
    }

    /**
     * {@link #select(String, Map, Map)} for a {@code name} that came from {@code source}, which
     * messages name: e.g. {@code "--distributed-backend"} for a command-line option.
     */
    public static DistributedBackend select(
            String name, String source, Map<String, DistributedBackend> backends, Map<String, String> env) {
        String chosen = name;
        if (chosen == null || chosen.isBlank()) {
            chosen = env.get(ENV_BACKEND);
            source = ENV_BACKEND;
        }
        int world = launchedWorld(env);
        if (chosen == null || chosen.isBlank()) {
            // Never alone without a word: a launcher that started several workers gets them a group.
            chosen = world > 1 ? AUTO : NONE;
            source = "WORLD_SIZE=" + world + ", no backend named";
        }
        if (chosen.trim().equalsIgnoreCase(AUTO)) {
            return selectAuto(source, backends, env);
        }
        if (chosen.trim().equalsIgnoreCase(NONE)
                && world > 1
                && "0".equals(env.get(LaunchEnvironment.RANK).trim())) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "backend none (from " + source + ") with WORLD_SIZE=" + world + ": ranks 0.."
                            + (world - 1)
                            + " each train alone on their own data, averaging nothing; name a backend (or auto) "
                            + "to train one model together");
        }
        DistributedBackend backend = backends.get(chosen.trim().toLowerCase(Locale.ROOT));
        if (backend == null) {
            throw new IllegalArgumentException(unknown(chosen, source, backends.keySet()));
        }
        if (!backend.isAvailable()) {
            throw new BackendUnavailableException("the " + backend.name() + " backend (from " + source
                    + ") cannot run here: " + backend.unavailableReason());
        }
        return backend;
    }

    /**
     * The Maven artifact ({@code groupId:artifactId}, and the JDK it needs when above 17) that
     * provides Cohort's engine called {@code name} (case-insensitive), or empty for a name that is
     * none of Cohort's engines ({@code auto} included).
     */
    public static java.util.Optional<String> artifact(String name) {
        return java.util.Optional.ofNullable(
                name == null ? null : ARTIFACTS.get(name.trim().toLowerCase(Locale.ROOT)));
    }

    /** Names the artifact that provides {@code name}, when it is one of Cohort's engines, and what is here. */
    private static String unknown(String name, String source, Collection<String> here) {
        String artifact = artifact(name).orElse(null);
        String available = "available: " + (here.isEmpty() ? "(none on the class path)" : String.join(", ", here));
        if (artifact == null) {
            return "unknown backend '" + name + "' (from " + source + "); " + available;
        }
        return "backend '" + name + "' (from " + source + ") is not on the class path: add the Maven artifact "
                + artifact + " to the program's dependencies; " + available;
    }

    /** WORLD_SIZE when a launch environment is present and it is a number, else 1. */
    private static int launchedWorld(Map<String, String> env) {
        if (!LaunchEnvironment.isPresent(env)) {
            return 1;
        }
        String text = env.get(LaunchEnvironment.WORLD_SIZE).trim();
        return text.matches("[0-9]{1,9}") ? Integer.parseInt(text) : 1;
    }

    /**
     * {@link #auto}'s choice, or the next engine in its order when the chosen one cannot run here
     * (its native libraries are missing, say); rank 0 logs which (INFO).
     */
    private static DistributedBackend selectAuto(
            String source, Map<String, DistributedBackend> backends, Map<String, String> env) {
        int jdk = Runtime.version().feature();
        Map<String, String> given = env;
        env = withLearnedLayout(env);
        AutoChoice choice = auto(env, jdk, backends.values());
        DistributedBackend backend = backends.get(choice.backend());
        if (backend == null) {
            throw new BackendUnavailableException("backend auto (from " + source + ") chose " + choice.backend() + " ("
                    + choice.reason() + "), which is not on the class path (cohort-runtime has it)");
        }
        String reason = choice.reason();
        if (!backend.isAvailable()) {
            List<BackendProvider> ranked =
                    LaunchEnvironment.isPresent(env) && JobLayout.of(env).worldSize() > 1
                            ? ranked(JobLayout.of(env), oldestJdk(env, jdk), meetable(env, backends.values()))
                            : List.of();
            DistributedBackend next = null;
            for (BackendProvider e : ranked) {
                if (e != backend && e.isAvailable()) {
                    next = (DistributedBackend) e;
                    break;
                }
            }
            if (next == null) {
                throw new BackendUnavailableException("backend auto (from " + source + ") chose " + choice.backend()
                        + " (" + reason + "), which cannot run here: " + backend.unavailableReason()
                        + "; no other engine on the class path suits this job");
            }
            reason = choice.backend() + " cannot run here: " + backend.unavailableReason();
            backend = next;
        }
        if ("0".equals(env.getOrDefault(LaunchEnvironment.RANK, "0"))) {
            LOG.log(
                    System.Logger.Level.INFO,
                    "backend auto (from " + source + "): " + backend.name() + " (" + reason + ")");
        }
        if (env == given) {
            return backend;
        }
        try {
            return backend.forEnvironment(env);
        } catch (UnsupportedOperationException e) {
            return backend; // an engine that cannot be made for another environment learns the layout itself
        }
    }

    /**
     * {@code env} with the host layout a {@link LayoutProbe} learned, where several workers were
     * launched with a rendezvous address and no word of which share a host; else {@code env}.
     */
    private static Map<String, String> withLearnedLayout(Map<String, String> env) {
        if (!LaunchEnvironment.isPresent(env)
                || launchedWorld(env) < 2
                || LaunchEnvironment.layoutGiven(env)
                || env.getOrDefault(LaunchEnvironment.MASTER_ADDR, "").isBlank()
                || env.getOrDefault(LaunchEnvironment.MASTER_PORT, "").isBlank()) {
            return env;
        }
        return ServiceLoader.load(LayoutProbe.class, Backends.class.getClassLoader())
                .findFirst()
                .map(probe -> probe.learn(env))
                .orElse(env);
    }
}
