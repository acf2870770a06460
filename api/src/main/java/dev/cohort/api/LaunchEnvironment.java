package dev.cohort.api;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * The environment a launcher gives each worker, with torchrun's names so PyTorch users feel at
 * home, plus Cohort's restart count and run id.
 *
 * <table>
 * <caption>Variables</caption>
 * <tr><td>{@code MASTER_ADDR}, {@code MASTER_PORT}</td><td>where rank 0 hosts the rendezvous store</td></tr>
 * <tr><td>{@code RANK}, {@code WORLD_SIZE}</td><td>global rank and number of workers</td></tr>
 * <tr><td>{@code LOCAL_RANK}, {@code LOCAL_WORLD_SIZE}</td><td>rank and number of workers on this node
 *     (default: one node, so the global values)</td></tr>
 * <tr><td>{@code GROUP_RANK}</td><td>this node's index (default 0 on one node)</td></tr>
 * <tr><td>{@code COHORT_RESTART_COUNT}</td><td>how often the launcher restarted the group (default 0)</td></tr>
 * <tr><td>{@code COHORT_RUN_ID}</td><td>names this run; all workers must agree (default "cohort")</td></tr>
 * </table>
 */
public record LaunchEnvironment(String masterAddr, int masterPort, Topology topology, int restartCount, String runId) {

    public static final String MASTER_ADDR = "MASTER_ADDR";
    public static final String MASTER_PORT = "MASTER_PORT";
    public static final String RANK = "RANK";
    public static final String WORLD_SIZE = "WORLD_SIZE";
    public static final String LOCAL_RANK = "LOCAL_RANK";
    public static final String LOCAL_WORLD_SIZE = "LOCAL_WORLD_SIZE";
    public static final String GROUP_RANK = "GROUP_RANK";
    /**
     * The number of nodes (torchrun's name; optional: set by {@code ./cohort run}). Nodes may run
     * different numbers of workers, so WORLD_SIZE need not be LOCAL_WORLD_SIZE times this.
     */
    public static final String GROUP_WORLD_SIZE = "GROUP_WORLD_SIZE";

    public static final String RESTART_COUNT = "COHORT_RESTART_COUNT";
    public static final String RUN_ID = "COHORT_RUN_ID";
    public static final String DEFAULT_RUN_ID = "cohort";

    public LaunchEnvironment {
        Objects.requireNonNull(masterAddr, "masterAddr");
        Objects.requireNonNull(topology, "topology");
        Objects.requireNonNull(runId, "runId");
        if (masterPort < 1 || masterPort > 65535) {
            throw new IllegalArgumentException(MASTER_PORT + " must be in [1, 65535], got " + masterPort);
        }
    }

    /** Reads the variables of this process's job ({@link JobEnvironment#current()}: whichever launcher started it). */
    public static LaunchEnvironment fromEnvironment() {
        return parse(JobEnvironment.currentVariables());
    }

    /**
     * Reads the variables from {@code env}.
     *
     * @throws IllegalArgumentException naming the variable and its value, when one is missing,
     *                                  not a number, out of range or inconsistent with the others
     */
    public static LaunchEnvironment parse(Map<String, String> env) {
        String addr = required(env, MASTER_ADDR);
        int port = integer(env, MASTER_PORT, null);
        if (port < 1 || port > 65535) {
            throw bad(MASTER_PORT, env, "must be a port in [1, 65535]");
        }
        Topology topology = parseTopology(env);
        return new LaunchEnvironment(addr, port, topology, parseRestartCount(env), parseRunId(env));
    }

    /**
     * Reads only the ranks ({@code RANK}, {@code WORLD_SIZE}, {@code LOCAL_RANK},
     * {@code LOCAL_WORLD_SIZE}, {@code GROUP_RANK}), for rendezvous that need no master address.
     */
    public static Topology parseTopology(Map<String, String> env) {
        int world = integer(env, WORLD_SIZE, null);
        if (world < 1) {
            throw bad(WORLD_SIZE, env, "must be >= 1");
        }
        int rank = integer(env, RANK, null);
        if (rank < 0 || rank >= world) {
            throw bad(RANK, env, "must be in [0, " + WORLD_SIZE + "=" + world + ")");
        }
        boolean anyLocal = layoutGiven(env);
        int localWorld = anyLocal ? integer(env, LOCAL_WORLD_SIZE, null) : world;
        if (localWorld < 1 || localWorld > world) {
            throw bad(LOCAL_WORLD_SIZE, env, "must be in [1, " + WORLD_SIZE + "=" + world + "]");
        }
        int localRank = anyLocal ? integer(env, LOCAL_RANK, null) : rank;
        if (localRank < 0 || localRank >= localWorld) {
            throw bad(LOCAL_RANK, env, "must be in [0, " + LOCAL_WORLD_SIZE + "=" + localWorld + ")");
        }
        int node = anyLocal ? integer(env, GROUP_RANK, null) : 0;
        if (node < 0) {
            throw bad(GROUP_RANK, env, "must be >= 0");
        }
        return new Topology(rank, world, localRank, localWorld, node);
    }

    /**
     * Whether {@code env} says which workers share a host ({@code LOCAL_RANK}, {@code LOCAL_WORLD_SIZE}
     * or {@code GROUP_RANK}). Without them {@link #parseTopology} takes one node, as an engine named
     * for one host expects; {@code auto} takes the layout as unknown ({@link JobLayout#known()}), and
     * the gloo engine learns it at rendezvous.
     */
    public static boolean layoutGiven(Map<String, String> env) {
        return env.containsKey(LOCAL_RANK) || env.containsKey(LOCAL_WORLD_SIZE) || env.containsKey(GROUP_RANK);
    }

    /**
     * {@code COHORT_RESTART_COUNT}, or 0 where it is unset or blank (a run no launcher restarts).
     *
     * @throws IllegalArgumentException naming the variable and its value when it is not a whole number >= 0
     */
    public static int parseRestartCount(Map<String, String> env) {
        String value = env.get(RESTART_COUNT);
        if (value == null || value.isBlank()) {
            return 0;
        }
        try {
            int restarts = Integer.parseInt(value.trim());
            if (restarts >= 0) {
                return restarts;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw bad(RESTART_COUNT, env, "must be a whole number >= 0");
    }

    /** {@code COHORT_RUN_ID}, or {@value #DEFAULT_RUN_ID}. */
    public static String parseRunId(Map<String, String> env) {
        String runId = env.getOrDefault(RUN_ID, DEFAULT_RUN_ID);
        if (runId.isBlank() || !runId.matches("[A-Za-z0-9._-]{1,64}")) {
            throw bad(RUN_ID, env, "must be 1-64 characters of [A-Za-z0-9._-]");
        }
        return runId;
    }

    /** Whether the variables a launcher sets are present (at least {@code RANK} and {@code WORLD_SIZE}). */
    public static boolean isPresent(Map<String, String> env) {
        return env.containsKey(RANK) && env.containsKey(WORLD_SIZE);
    }

    /** The variables, as a launcher passes them to a worker. */
    public Map<String, String> toMap() {
        Map<String, String> m = new LinkedHashMap<>();
        m.put(MASTER_ADDR, masterAddr);
        m.put(MASTER_PORT, Integer.toString(masterPort));
        m.put(RANK, Integer.toString(topology.rank()));
        m.put(WORLD_SIZE, Integer.toString(topology.worldSize()));
        m.put(LOCAL_RANK, Integer.toString(topology.localRank()));
        m.put(LOCAL_WORLD_SIZE, Integer.toString(topology.localWorldSize()));
        m.put(GROUP_RANK, Integer.toString(topology.nodeRank()));
        m.put(RESTART_COUNT, Integer.toString(restartCount));
        m.put(RUN_ID, runId);
        m.put(JobEnvironment.LAUNCHED_BY, "cohort");
        return m;
    }

    private static String required(Map<String, String> env, String name) {
        String v = env.get(name);
        if (v == null || v.isBlank()) {
            if (env.containsKey("OMPI_COMM_WORLD_RANK")) {
                throw new IllegalArgumentException("environment variable " + name + " is not set: Open MPI's mpirun "
                        + "gives the ranks but no rendezvous address; set " + MASTER_ADDR + " and " + MASTER_PORT
                        + " for every rank, e.g. mpirun -x MASTER_ADDR=<first host> -x MASTER_PORT=29500 ..., or use "
                        + "--distributed-backend mpi, which needs none");
            }
            throw new IllegalArgumentException("environment variable " + name + " is not set; start workers with "
                    + "`./cohort run` or set " + MASTER_ADDR + ", " + MASTER_PORT + ", " + RANK + " and " + WORLD_SIZE);
        }
        return v.trim();
    }

    private static int integer(Map<String, String> env, String name, Integer fallback) {
        String v = env.get(name);
        if (v == null && fallback != null) {
            return fallback;
        }
        String text = required(env, name);
        try {
            return Integer.parseInt(text);
        } catch (NumberFormatException e) {
            throw bad(name, env, "is not an integer");
        }
    }

    private static IllegalArgumentException bad(String name, Map<String, String> env, String why) {
        return new IllegalArgumentException("environment variable " + name + "='" + env.get(name) + "' " + why);
    }
}
