package dev.cohort.api;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Which launcher started this process, and its variables translated into Cohort's
 * ({@link LaunchEnvironment}'s names): every part of Cohort reads the job through
 * {@link #current()}, so a trainer runs unchanged under each launcher below.
 *
 * <table>
 * <caption>Launchers, in the order they are looked for</caption>
 * <tr><td>{@link Launcher#COHORT}</td><td>{@code ./cohort run}: {@value #LAUNCHED_BY}=cohort</td></tr>
 * <tr><td>{@link Launcher#SPARK}</td><td>cohort-spark's barrier stage: {@value #LAUNCHED_BY}=spark,
 *     and Cohort's own variables</td></tr>
 * <tr><td>{@link Launcher#TORCHRUN}</td><td>{@code TORCHELASTIC_RUN_ID}: torchrun's own variables; its
 *     run id and restart count become Cohort's; with {@code TORCHELASTIC_USE_AGENT_STORE=True} the ranks
 *     join torchrun's store on {@code MASTER_PORT} instead of hosting one ({@value #AGENT_STORE})</td></tr>
 * <tr><td>{@link Launcher#KUBERNETES}</td><td>{@code RANK}, {@code WORLD_SIZE} and
 *     {@code KUBERNETES_SERVICE_HOST} (a PyTorchJob or JobSet): without {@code LOCAL_*} the host
 *     layout is unknown ({@link JobLayout#known()}) until the engine learns it at rendezvous</td></tr>
 * <tr><td>{@link Launcher#VARIABLES}</td><td>{@code RANK} and {@code WORLD_SIZE} set some other way</td></tr>
 * <tr><td>{@link Launcher#OPEN_MPI}</td><td>{@code OMPI_COMM_WORLD_RANK}, {@code …_SIZE},
 *     {@code …_LOCAL_RANK}, {@code …_LOCAL_SIZE}; {@code MASTER_ADDR} and {@code MASTER_PORT} must be
 *     given ({@code mpirun -x})</td></tr>
 * <tr><td>{@link Launcher#SLURM}</td><td>{@code srun}'s {@code SLURM_PROCID}, {@code SLURM_NTASKS},
 *     {@code SLURM_LOCALID}, {@code SLURM_NODEID}, {@code SLURM_NNODES}, {@code SLURM_STEP_TASKS_PER_NODE};
 *     unless set, {@code MASTER_ADDR} is the first host of the step's node list and {@code MASTER_PORT}
 *     {@value #SLURM_PORT_BASE} plus the job id modulo {@value #SLURM_PORT_SPAN}</td></tr>
 * <tr><td>{@link Launcher#NONE}</td><td>none of these: one process</td></tr>
 * </table>
 *
 * <p>A variable of Cohort's that is already set and disagrees with the launcher's (say
 * {@code WORLD_SIZE=4} exported by hand under {@code srun -n 2}) is an error naming both.
 *
 * @param launcher  what started the process
 * @param variables the environment with Cohort's variables added from the launcher's
 * @param notes     what was derived rather than read (for rank 0's one line about the launch)
 */
public record JobEnvironment(Launcher launcher, Map<String, String> variables, List<String> notes) {

    /** Set by {@code ./cohort run} in every worker's environment. */
    public static final String LAUNCHED_BY = "COHORT_LAUNCHED_BY";
    /**
     * {@code 1} when the rendezvous store is hosted by the launcher's agent (torchrun's), so that
     * rank 0 joins it as a client; the ranks' keys then live under {@code /worker/attempt_<restarts>}.
     */
    public static final String AGENT_STORE = "COHORT_AGENT_STORE";

    public static final int SLURM_PORT_BASE = 15000;
    public static final int SLURM_PORT_SPAN = 20000;

    /** The launchers Cohort understands. */
    public enum Launcher {
        COHORT("cohort run"),
        SPARK("a Spark barrier stage (cohort-spark)"),
        TORCHRUN("torchrun"),
        KUBERNETES("Kubernetes"),
        VARIABLES("RANK/WORLD_SIZE variables"),
        OPEN_MPI("Open MPI's mpirun"),
        SLURM("Slurm's srun"),
        NONE("no launcher (one process)");

        private final String description;

        Launcher(String description) {
            this.description = description;
        }

        /** For messages: "torchrun". */
        public String description() {
            return description;
        }
    }

    private static final System.Logger LOG = System.getLogger(JobEnvironment.class.getName());
    private static volatile JobEnvironment current;

    public JobEnvironment {
        variables = Map.copyOf(variables);
        notes = List.copyOf(notes);
    }

    /**
     * This process's job, read once from {@link System#getenv()}; rank 0 logs which launcher it
     * found (INFO) unless that is Cohort's own (whose launcher says so itself).
     *
     * @throws IllegalArgumentException naming the variables, when the launcher's contradict Cohort's
     */
    public static JobEnvironment current() {
        JobEnvironment job = current;
        if (job == null) {
            synchronized (JobEnvironment.class) {
                job = current;
                if (job == null) {
                    job = detect(System.getenv());
                    if (job.launcher() != Launcher.NONE
                            && job.launcher() != Launcher.COHORT
                            && "0".equals(job.variables().get(LaunchEnvironment.RANK))) {
                        LOG.log(System.Logger.Level.INFO, job.describe());
                    }
                    current = job;
                }
            }
        }
        return job;
    }

    /** {@link #current()}'s variables: what Cohort's engines and programs read instead of the raw environment. */
    public static Map<String, String> currentVariables() {
        return current().variables();
    }

    /**
     * Tells the launcher why this worker fails, where it asks (torchrun's {@code TORCHELASTIC_ERROR_FILE},
     * the file its agent reads to name the root cause in its summary, in the format of torchrun's own
     * {@code @record}): the failure's message and its stack trace. Programs call it where they turn
     * a failure into an exit code; Cohort's command-line conventions (cohort-cli's {@code Commands})
     * do. A file already there (an earlier failure's) is kept; a file that cannot be written is
     * logged, never thrown.
     */
    public static void recordFailure(Throwable failure) {
        String file = System.getenv("TORCHELASTIC_ERROR_FILE");
        if (file == null || file.isBlank()) {
            return;
        }
        StringWriter trace = new StringWriter();
        failure.printStackTrace(new PrintWriter(trace));
        String json = "{\"message\": {\"message\": \"" + jsonText(failure.toString()) + "\", \"extraInfo\": "
                + "{\"py_callstack\": \"" + jsonText(trace.toString()) + "\", \"timestamp\": \""
                + Instant.now().getEpochSecond() + "\"}}}\n";
        try {
            Files.writeString(Path.of(file), json, StandardOpenOption.CREATE_NEW);
        } catch (FileAlreadyExistsException e) {
            // the first failure stays the one reported
        } catch (IOException | RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "cannot write torchrun's error file " + file + ": " + e);
        }
    }

    /** {@code text} as the inside of a JSON string. */
    private static String jsonText(String text) {
        StringBuilder sb = new StringBuilder(text.length() + 16);
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\t' -> sb.append("\\t");
                case '\r' -> sb.append("\\r");
                default -> {
                    if (c < 0x20) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        return sb.toString();
    }

    /** One line for the log: "launched by torchrun: RANK 0 of WORLD_SIZE 2, ...; notes". */
    public String describe() {
        StringBuilder sb = new StringBuilder("launched by ").append(launcher.description());
        if (LaunchEnvironment.isPresent(variables)) {
            sb.append(": rank ")
                    .append(variables.get(LaunchEnvironment.RANK))
                    .append(" of ")
                    .append(variables.get(LaunchEnvironment.WORLD_SIZE));
            String master = variables.get(LaunchEnvironment.MASTER_ADDR);
            if (master != null) {
                sb.append(", rendezvous at ")
                        .append(master)
                        .append(':')
                        .append(variables.get(LaunchEnvironment.MASTER_PORT));
            }
        }
        notes.forEach(n -> sb.append("; ").append(n));
        return sb.toString();
    }

    /**
     * Finds the launcher in {@code env} and adds Cohort's variables from its own.
     *
     * @throws IllegalArgumentException naming the variables, when the launcher's contradict Cohort's
     *                                  or one the launcher needs is missing or malformed
     */
    public static JobEnvironment detect(Map<String, String> env) {
        if ("cohort".equals(env.get(LAUNCHED_BY))) {
            return new JobEnvironment(Launcher.COHORT, env, List.of());
        }
        if ("spark".equals(env.get(LAUNCHED_BY))) {
            return new JobEnvironment(Launcher.SPARK, env, List.of());
        }
        if (env.containsKey("TORCHELASTIC_RUN_ID")) {
            return torchrun(env);
        }
        if (LaunchEnvironment.isPresent(env)) {
            return env.containsKey("KUBERNETES_SERVICE_HOST")
                    ? kubernetes(env)
                    : new JobEnvironment(Launcher.VARIABLES, env, List.of());
        }
        if (env.containsKey("OMPI_COMM_WORLD_RANK")) {
            return openMpi(env);
        }
        if (env.containsKey("SLURM_PROCID") && (env.containsKey("SLURM_STEP_ID") || env.containsKey("SLURM_STEPID"))) {
            return slurm(env);
        }
        return new JobEnvironment(Launcher.NONE, env, List.of());
    }

    private static JobEnvironment torchrun(Map<String, String> env) {
        Derived d = new Derived(env, "torchrun");
        d.put(LaunchEnvironment.RUN_ID, runId("torchrun-" + env.get("TORCHELASTIC_RUN_ID")), "TORCHELASTIC_RUN_ID");
        d.put(
                LaunchEnvironment.RESTART_COUNT,
                env.getOrDefault("TORCHELASTIC_RESTART_COUNT", "0"),
                "TORCHELASTIC_RESTART_COUNT");
        if ("true"
                .equalsIgnoreCase(
                        env.getOrDefault("TORCHELASTIC_USE_AGENT_STORE", "").trim())) {
            d.put(AGENT_STORE, "1", "TORCHELASTIC_USE_AGENT_STORE");
            d.notes.add("joining torchrun's store");
        }
        return d.done(Launcher.TORCHRUN);
    }

    private static JobEnvironment kubernetes(Map<String, String> env) {
        Derived d = new Derived(env, "Kubernetes");
        if (!LaunchEnvironment.layoutGiven(env)) {
            d.notes.add("no LOCAL_RANK/LOCAL_WORLD_SIZE: which ranks share a pod is learned at rendezvous");
        }
        return d.done(Launcher.KUBERNETES);
    }

    private static JobEnvironment openMpi(Map<String, String> env) {
        Derived d = new Derived(env, "Open MPI");
        int rank = d.copy(LaunchEnvironment.RANK, "OMPI_COMM_WORLD_RANK");
        int size = d.copy(LaunchEnvironment.WORLD_SIZE, "OMPI_COMM_WORLD_SIZE");
        d.copy(LaunchEnvironment.LOCAL_RANK, "OMPI_COMM_WORLD_LOCAL_RANK");
        int localSize = d.copy(LaunchEnvironment.LOCAL_WORLD_SIZE, "OMPI_COMM_WORLD_LOCAL_SIZE");
        if (localSize == size) {
            d.put(LaunchEnvironment.GROUP_RANK, 0, "every rank on one host");
            d.put(LaunchEnvironment.GROUP_WORLD_SIZE, 1, "every rank on one host");
        } else if (size % localSize == 0) {
            // mpirun's default mapping fills each host's slots in rank order.
            d.put(
                    LaunchEnvironment.GROUP_RANK,
                    rank / localSize,
                    "ranks filled host by host (mpirun's default --map-by slot)");
            d.put(
                    LaunchEnvironment.GROUP_WORLD_SIZE,
                    size / localSize,
                    "OMPI_COMM_WORLD_SIZE / OMPI_COMM_WORLD_LOCAL_SIZE");
        } else {
            throw new IllegalArgumentException("Open MPI: hosts run different numbers of ranks (OMPI_COMM_WORLD_SIZE="
                    + size
                    + ", OMPI_COMM_WORLD_LOCAL_SIZE=" + localSize + " here), so Cohort cannot tell this host's index; "
                    + "give every host the same number of slots, or set GROUP_RANK");
        }
        String job = env.get("OMPI_MCA_ess_base_jobid");
        if (!env.containsKey(LaunchEnvironment.RUN_ID)
                && job != null
                && job.trim().matches("[0-9]{1,20}")) {
            // Two mpirun jobs on one host must not share a shared-memory file.
            d.put(LaunchEnvironment.RUN_ID, "mpirun-" + job.trim(), "OMPI_MCA_ess_base_jobid");
        }
        if (!env.containsKey(LaunchEnvironment.MASTER_ADDR) || !env.containsKey(LaunchEnvironment.MASTER_PORT)) {
            // The mpi engine needs none; the others say how to give one (LaunchEnvironment.parse).
            d.notes.add("no rendezvous address (MASTER_ADDR, MASTER_PORT): the mpi engine needs none");
        }
        return d.done(Launcher.OPEN_MPI);
    }

    private static JobEnvironment slurm(Map<String, String> env) {
        Derived d = new Derived(env, "Slurm");
        d.copy(LaunchEnvironment.RANK, "SLURM_PROCID");
        d.copy(LaunchEnvironment.WORLD_SIZE, "SLURM_NTASKS");
        int node = d.integer("SLURM_NODEID");
        String nodesVar = env.containsKey("SLURM_STEP_NUM_NODES") ? "SLURM_STEP_NUM_NODES" : "SLURM_NNODES";
        int nodes = d.integer(nodesVar);
        String perNodeVar =
                env.containsKey("SLURM_STEP_TASKS_PER_NODE") ? "SLURM_STEP_TASKS_PER_NODE" : "SLURM_TASKS_PER_NODE";
        List<Integer> perNode = tasksPerNode(perNodeVar, d.text(perNodeVar));
        if (perNode.size() != nodes || node >= nodes) {
            throw new IllegalArgumentException("Slurm: " + perNodeVar + "='" + env.get(perNodeVar) + "' names "
                    + perNode.size() + " node(s) but " + nodesVar + "=" + nodes + " and SLURM_NODEID=" + node);
        }
        d.copy(LaunchEnvironment.LOCAL_RANK, "SLURM_LOCALID");
        d.put(LaunchEnvironment.LOCAL_WORLD_SIZE, perNode.get(node), perNodeVar);
        d.put(LaunchEnvironment.GROUP_RANK, node, "SLURM_NODEID");
        d.put(LaunchEnvironment.GROUP_WORLD_SIZE, nodes, nodesVar);
        String jobId = d.text("SLURM_JOB_ID");
        String step = env.getOrDefault("SLURM_STEP_ID", env.getOrDefault("SLURM_STEPID", "0"));
        if (!env.containsKey(LaunchEnvironment.MASTER_ADDR)) {
            String listVar = env.containsKey("SLURM_STEP_NODELIST") ? "SLURM_STEP_NODELIST" : "SLURM_JOB_NODELIST";
            d.put(LaunchEnvironment.MASTER_ADDR, firstHost(listVar, d.text(listVar)), "the first host of " + listVar);
        }
        if (!env.containsKey(LaunchEnvironment.MASTER_PORT)) {
            if (!jobId.matches("[0-9]{1,18}")) {
                throw new IllegalArgumentException(
                        "Slurm: SLURM_JOB_ID='" + jobId + "' is not a number; set MASTER_PORT");
            }
            d.put(
                    LaunchEnvironment.MASTER_PORT,
                    SLURM_PORT_BASE + (int) (Long.parseLong(jobId) % SLURM_PORT_SPAN),
                    SLURM_PORT_BASE + " + SLURM_JOB_ID % " + SLURM_PORT_SPAN);
        }
        if (!env.containsKey(LaunchEnvironment.RUN_ID)) {
            d.put(LaunchEnvironment.RUN_ID, runId("slurm-" + jobId + "." + step), "SLURM_JOB_ID.SLURM_STEP_ID");
        }
        if (env.containsKey("SLURM_RESTART_COUNT")) {
            d.put(LaunchEnvironment.RESTART_COUNT, d.integer("SLURM_RESTART_COUNT"), "SLURM_RESTART_COUNT");
        }
        return d.done(Launcher.SLURM);
    }

    /** Slurm's tasks-per-node list, "2(x3),1" = [2, 2, 2, 1]. */
    static List<Integer> tasksPerNode(String name, String text) {
        List<Integer> counts = new ArrayList<>();
        Matcher m = Pattern.compile("([0-9]{1,6})(?:\\(x([0-9]{1,6})\\))?").matcher("");
        for (String part : text.split(",")) {
            if (!m.reset(part.trim()).matches()) {
                throw new IllegalArgumentException("Slurm: " + name + "='" + text + "' is not a list such as 2(x3),1");
            }
            int repeat = m.group(2) != null ? Integer.parseInt(m.group(2)) : 1;
            for (int i = 0; i < repeat; i++) {
                counts.add(Integer.parseInt(m.group(1)));
            }
        }
        return counts;
    }

    /** The first host of a Slurm node list: "gpu[07-09,12],cpu1" gives "gpu07". */
    static String firstHost(String name, String list) {
        Matcher m = Pattern.compile("([^,\\[\\]]+)(?:\\[([0-9]+)[^\\]]*\\])?([^,\\[\\]]*).*")
                .matcher(list.trim());
        if (!m.matches()) {
            throw new IllegalArgumentException(
                    "Slurm: " + name + "='" + list + "' is not a node list; set MASTER_ADDR");
        }
        return m.group(1) + (m.group(2) != null ? m.group(2) : "") + m.group(3);
    }

    /** A run id of Cohort's alphabet ([A-Za-z0-9._-], at most 64) from a launcher's. */
    private static String runId(String raw) {
        String id = raw.replaceAll("[^A-Za-z0-9._-]", "-");
        return id.length() <= 64 ? id : id.substring(0, 64);
    }

    /** The variables being added, each with where it came from, for the conflict check and the notes. */
    private static final class Derived {
        private final Map<String, String> env;
        private final String launcher;
        private final Map<String, String> added = new LinkedHashMap<>();
        private final Map<String, String> conflicts = new TreeMap<>();
        private final List<String> notes = new ArrayList<>();

        Derived(Map<String, String> env, String launcher) {
            this.env = env;
            this.launcher = launcher;
        }

        void put(String name, Object value, String from) {
            String v = value.toString();
            String set = env.get(name);
            if (set != null && !set.trim().equals(v)) {
                conflicts.put(name, name + "=" + set + " but " + launcher + " says " + v + " (" + from + ")");
            }
            added.putIfAbsent(name, v);
        }

        String text(String name) {
            String v = env.get(name);
            if (v == null || v.isBlank()) {
                throw new IllegalArgumentException(launcher + ": environment variable " + name + " is not set");
            }
            return v.trim();
        }

        /** Sets {@code name} to the integer the launcher's variable {@code from} holds; returns it. */
        int copy(String name, String from) {
            int value = integer(from);
            put(name, value, from);
            return value;
        }

        int integer(String name) {
            String v = text(name);
            try {
                return Integer.parseInt(v);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(
                        launcher + ": environment variable " + name + "='" + v + "' is not an integer");
            }
        }

        JobEnvironment done(Launcher which) {
            if (!conflicts.isEmpty()) {
                throw new IllegalArgumentException("the environment contradicts " + launcher + ": "
                        + String.join("; ", conflicts.values())
                        + "; unset the variables Cohort reads (or start the job "
                        + "without " + launcher + ")");
            }
            Map<String, String> all = new LinkedHashMap<>(env);
            added.forEach(all::putIfAbsent);
            return new JobEnvironment(which, all, notes);
        }
    }

    @Override
    public String toString() {
        return launcher.name().toLowerCase(Locale.ROOT) + " " + describe();
    }
}
