package dev.cohort.api;


import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.TreeMap;

/**
 * Finds the backends on the class path ({@link ServiceLoader} of {@link DistributedBackend}) and
 * picks one by name: the seed's {@code distributed_utils}.
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
    /** The first JDK that runs the shared-memory engines (foreign-memory API). */
    static final int SHARED_MEMORY_JDK = 22;

    /** What {@value #AUTO} stands for: a backend's name, and why, for messages. */
    public record AutoChoice(String backend, String reason) {
    }

    private Backends() {
    }

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
     * The fastest backend for workers laid out as the launch environment {@code env} says, on JDK
     * {@code jdk}, before checking what is on the class path: {@code none} for one worker (or no
     * launch environment); {@code shm} when all workers are on one host and {@code hier} (shm
     * within each host, Gloo between them) when they span several, on JDK 22 or newer; else
     * {@code gloo}. The JDK is the older of {@code jdk} and
     * {@value #ENV_OLDEST_JDK}, when set: every process must choose the same.
     */
    public static AutoChoice auto(Map<String, String> env, int jdk) {
        if (!dev.cohort.api.LaunchEnvironment.isPresent(env)) {
            return new AutoChoice(NONE, "no launch environment (RANK, WORLD_SIZE): one worker");
        }
        Topology t = dev.cohort.api.LaunchEnvironment.parseTopology(env);
        if (t.worldSize() == 1) {
            return new AutoChoice(NONE, "one worker");
        }
        boolean oneHost = t.localWorldSize() == t.worldSize();
        int oldest = oldestJdk(env, jdk);
        if (oldest < SHARED_MEMORY_JDK) {
            return new AutoChoice("gloo", oldest < jdk
                    ? "a node of this job runs its workers on JDK " + oldest + ", which has no foreign-memory API for "
                            + "shared memory, so every node uses gloo; JDK >= " + SHARED_MEMORY_JDK + " on every node "
                            + "would use hier"
                    : "JDK " + jdk + " has no foreign-memory API for shared memory; a JDK >= " + SHARED_MEMORY_JDK
                            + " would use " + (oneHost ? "shm" : "hier"));
        }
        String nodes = env.get(dev.cohort.api.LaunchEnvironment.GROUP_WORLD_SIZE);
        String hosts = nodes != null && nodes.trim().matches("[0-9]{1,6}") ? nodes.trim()
                : t.worldSize() % t.localWorldSize() == 0 ? Integer.toString(t.worldSize() / t.localWorldSize()) : "several";
        return oneHost
                ? new AutoChoice("shm", "all " + t.worldSize() + " workers on one host: shared memory")
                : new AutoChoice("hier", t.worldSize() + " workers on " + hosts
                        + " hosts: shared memory within each host, Gloo between hosts");
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
     * ({@code ./cohort run} sets {@value #AUTO}), and when that is unset too, {@code none}.
     *
     * @throws IllegalArgumentException     for an unknown name, listing the known ones
     * @throws BackendUnavailableException for a known backend that cannot run here
     */
    public static DistributedBackend select(String name) {
        return select(name, discover(), System.getenv());
    }

    /** {@link #select(String)} among {@code backends}, reading {@code env} instead of the process environment. */
    public static DistributedBackend select(String name, Map<String, DistributedBackend> backends, Map<String, String> env) {
        String chosen = name;
        String source = "--distributed-backend";
        if (chosen == null || chosen.isBlank()) {
            chosen = env.get(ENV_BACKEND);
            source = ENV_BACKEND;
        }
        if (chosen == null || chosen.isBlank()) {
            chosen = NONE;
        }
        if (chosen.trim().equalsIgnoreCase(AUTO)) {
            return selectAuto(source, backends, env);
        }
        DistributedBackend backend = backends.get(chosen.trim().toLowerCase(Locale.ROOT));
        if (backend == null) {
            throw new IllegalArgumentException("unknown backend '" + chosen + "' (from " + source
                    + "); available: " + String.join(", ", backends.keySet()));
        }
        if (!backend.isAvailable()) {
            throw new BackendUnavailableException("the " + backend.name() + " backend (from " + source
                    + ") cannot run here: " + backend.unavailableReason());
        }
        return backend;
    }

    /**
     * {@link #auto}'s choice, or {@code gloo} when the chosen engine is not on the class path or
     * cannot run here; says which on rank 0's standard error.
     */
    private static DistributedBackend selectAuto(String source, Map<String, DistributedBackend> backends,
                                                 Map<String, String> env) {
        AutoChoice choice = auto(env, Runtime.version().feature());
        DistributedBackend backend = backends.get(choice.backend());
        String reason = choice.reason();
        if (backend == null || !backend.isAvailable()) {
            DistributedBackend gloo = backends.get("gloo");
            if (gloo == null || !gloo.isAvailable()) {
                throw new BackendUnavailableException("backend auto (from " + source + ") chose " + choice.backend()
                        + " (" + reason + "), which " + (backend == null ? "is not on the class path" : "cannot run here: "
                        + backend.unavailableReason()) + ", and gloo cannot run either");
            }
            reason = choice.backend() + (backend == null ? " is not on the class path" : " cannot run here: "
                    + backend.unavailableReason());
            backend = gloo;
        }
        if ("0".equals(env.getOrDefault(dev.cohort.api.LaunchEnvironment.RANK, "0"))) {
            System.err.println("cohort: backend auto (from " + source + "): " + backend.name() + " (" + reason + ")");
        }
        return backend;
    }
}
