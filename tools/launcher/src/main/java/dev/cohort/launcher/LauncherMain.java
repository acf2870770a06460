package dev.cohort.launcher;

import dev.cohort.api.Backends;
import dev.cohort.cli.Commands;
import dev.cohort.runtime.auth.JobSecret;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code ./cohort run [options] -- PROGRAM [ARGS...]}: see {@link Launcher}. Exit code 2 = bad input. */
@Command(
        name = "cohort run",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        versionProvider = Commands.Version.class,
        description = {
            "Starts a group of workers with the launch environment (MASTER_ADDR, MASTER_PORT, RANK, "
                    + "WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, COHORT_RESTART_COUNT, COHORT_RUN_ID), "
                    + "prefixes their output with the rank, stops them all when one fails and restarts the group "
                    + "up to --max-restarts times.",
            "PROGRAM is a main class on Cohort's class path, a .jar, or any command."
        },
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {
            "0:every worker finished cleanly",
            "2:bad input (nothing started)",
            "N:the failed worker's exit code (128 + signal when killed by a signal)"
        })
public final class LauncherMain implements Callable<Integer> {

    /** The variable a user's class path comes from when {@code --classpath} is not given. */
    public static final String CLASSPATH_ENV = "COHORT_CLASSPATH";

    /**
     * The system property naming Cohort's part of the workers' class path (the distribution's
     * {@code lib/*}, without the command's own tools); unset, this JVM's class path.
     */
    public static final String WORKERS_CLASSPATH = "cohort.workers.classpath";

    /** The exit code for bad input: nothing was started. */
    public static final int BAD_INPUT = Commands.BAD_INPUT;

    @Option(
            names = "--nproc-per-node",
            paramLabel = "N|auto",
            defaultValue = "1",
            description = "workers on this node; auto = the number of cores (default: ${DEFAULT-VALUE})")
    String nprocPerNode;

    @Option(
            names = "--nnodes",
            paramLabel = "N|MIN:MAX",
            defaultValue = "1",
            description = "nodes; MIN:MAX starts with MIN or more once the join timeout passes without all MAX, and is "
                    + "elastic (default: ${DEFAULT-VALUE})")
    String nnodes;

    @Option(
            names = "--node-rank",
            paramLabel = "K",
            defaultValue = "0",
            description = "this node's index in [0, nnodes) (default: ${DEFAULT-VALUE})")
    String nodeRank;

    @Option(
            names = "--master-addr",
            paramLabel = "HOST",
            description = "address of node 0, where rank 0 listens (default: 127.0.0.1; required with --nnodes > 1)")
    String masterAddr;

    @Option(
            names = "--master-port",
            paramLabel = "PORT",
            defaultValue = "29500",
            description = "rank 0's port; 0 = pick a free one (single node) (default: ${DEFAULT-VALUE})")
    String masterPort;

    @Option(
            names = "--control-port",
            paramLabel = "PORT",
            defaultValue = "0",
            description = "node 0's launcher control channel with --nnodes > 1 (default: master port + 1)")
    String controlPort;

    @Option(
            names = "--max-restarts",
            paramLabel = "N",
            defaultValue = "0",
            description = "restarts of the whole group after a failure (default: ${DEFAULT-VALUE})")
    String maxRestarts;

    @Option(
            names = "--run-id",
            paramLabel = "ID",
            defaultValue = "cohort",
            description = "names the run (COHORT_RUN_ID); all nodes must agree (default: ${DEFAULT-VALUE})")
    String runId;

    @Option(names = "--log-dir", paramLabel = "DIR", description = "also write each rank's output to DIR/rank-R.log")
    Path logDir;

    @Option(
            names = "--bind-cores",
            description = "Pin each worker to its share of the cores with taskset "
                    + "(when there are no more workers than cores); recommended for the shm engine.")
    boolean bindCores;

    @Option(
            names = "--grace-period",
            paramLabel = "SECONDS",
            defaultValue = "5",
            description = "between SIGTERM and SIGKILL when stopping workers (default: ${DEFAULT-VALUE})")
    String gracePeriod;

    @Option(
            names = "--join-timeout",
            paramLabel = "SECONDS",
            defaultValue = "60",
            description = "how long nodes wait for each other with --nnodes > 1 (default: ${DEFAULT-VALUE})")
    String joinTimeout;

    @Option(
            names = "--elastic",
            paramLabel = "MIN",
            defaultValue = "0",
            description = "elastic: when a worker or a node other than node 0 is lost, the others re-form the group "
                    + "without a restart and go on, while at least MIN workers of all nodes live (the program uses "
                    + "ElasticJob; give every node the same MIN)")
    String elastic;

    @Option(
            names = "--secret-file",
            paramLabel = "FILE",
            description = "the job's secret (first line of FILE, 16+ characters), the same file on every node: every "
                    + "connection of the job proves it (default: $COHORT_SECRET or $COHORT_SECRET_FILE; with one node, "
                    + "a new secret for each run; with several, one of these is required)")
    Path secretFile;

    @Option(
            names = "--insecure-no-secret",
            description = "with several nodes, run without a job secret: every process that can reach the job's "
                    + "ports is trusted (see docs/SECURITY.md)")
    boolean insecureNoSecret;

    @Option(
            names = "--backend",
            paramLabel = "NAME",
            description =
                    "the engine the workers use, without touching the program's arguments: sets COHORT_BACKEND=NAME "
                            + "(auto, none, threads, tcp, gloo, shm, hier or mpi), which a program's own --distributed-backend "
                            + "overrides (default: $COHORT_BACKEND, else auto)")
    String backend;

    @Option(
            names = {"-cp", "--classpath", "--class-path"},
            paramLabel = "PATH",
            description = "the program's classes and jars, separated by ':' (DIR/* = every jar in DIR), ahead of "
                    + "Cohort's own on the workers' class path; for a main class (default: $COHORT_CLASSPATH)")
    String classPath;

    @Spec
    CommandSpec spec;

    @Parameters(paramLabel = "PROGRAM", arity = "0..*", description = "after --: the program and its arguments")
    List<String> program = new ArrayList<>();

    /**
     * --secret-file, else the environment's, else (one node) a new one. Several nodes without one
     * are refused unless --insecure-no-secret: the launcher cannot hand a secret it made to the
     * other nodes over the network it is meant to protect.
     */
    private Optional<JobSecret> secret(int nodes) {
        if (secretFile != null) {
            if (insecureNoSecret) {
                throw new IllegalArgumentException("--insecure-no-secret and --secret-file contradict; give one");
            }
            return Optional.of(JobSecret.read(secretFile));
        }
        Optional<JobSecret> given = JobSecret.from(System.getenv());
        if (given.isPresent()) {
            return given;
        }
        if (nodes == 1) {
            return Optional.of(JobSecret.generate());
        }
        if (!insecureNoSecret) {
            throw new IllegalArgumentException("--nnodes " + nnodes + " needs a job secret that every node shares, "
                    + "and cohort run cannot send one to the other nodes safely: make one with "
                    + "`(umask 077; openssl rand -hex 32 > job.secret)`, copy it to every node and pass "
                    + "--secret-file job.secret on each (or set " + JobSecret.ENV + " or " + JobSecret.FILE_ENV
                    + "); or, on a network you trust, pass --insecure-no-secret on each node");
        }
        err().println(spec.qualifiedName() + ": WARNING: no job secret (--insecure-no-secret): every process "
                + "that can reach this job's ports is trusted; see docs/SECURITY.md");
        err().flush();
        return Optional.empty();
    }

    public static void main(String[] args) {
        LogFormat.useHere();
        System.exit(run(args));
    }

    /**
     * {@code name} as {@value Backends#ENV_BACKEND} for the workers, lower-case: one of Cohort's
     * engines, one on this class path, or {@value Backends#AUTO}.
     *
     * @throws IllegalArgumentException naming the known engines
     */
    static String backend(String name) {
        String n = name.trim().toLowerCase(java.util.Locale.ROOT);
        if (n.equals(Backends.AUTO)
                || Backends.artifact(n).isPresent()
                || Backends.discover().containsKey(n)) {
            return n;
        }
        java.util.Set<String> known = new java.util.TreeSet<>(Backends.names());
        known.addAll(List.of("none", "threads", "tcp", "gloo", "shm", "hier", "mpi"));
        throw new IllegalArgumentException(
                "--backend must name an engine: one of " + String.join(", ", known) + "; got '" + name + "'");
    }

    /** Parses {@code args} and runs the launcher; returns the exit code. */
    public static int run(String... args) {
        return command().execute(args);
    }

    /** This command with Cohort's conventions (see {@link Commands}), to run or to add to another. */
    public static CommandLine command() {
        CommandLine cli = Commands.standard(new LauncherMain());
        cli.setUnmatchedOptionsArePositionalParams(false);
        return cli;
    }

    @Override
    public Integer call() {
        LaunchOptions options;
        WorkerProgram worker;
        try {
            LaunchOptions.Builder builder = LaunchOptions.builder();
            if (backend != null) {
                builder.addEnvironment(Backends.ENV_BACKEND, backend(backend));
            }
            options = builder.nprocPerNode(LaunchOptions.parseCount("--nproc-per-node", nprocPerNode, true))
                    .nnodes(LaunchOptions.parseNodes(nnodes)[0], LaunchOptions.parseNodes(nnodes)[1])
                    .nodeRank(LaunchOptions.parseCount("--node-rank", nodeRank, false))
                    .masterAddr(masterAddr)
                    .masterPort(LaunchOptions.parseCount("--master-port", masterPort, false))
                    .controlPort(LaunchOptions.parseCount("--control-port", controlPort, false))
                    .maxRestarts(LaunchOptions.parseCount("--max-restarts", maxRestarts, false))
                    .runId(runId)
                    .logDir(logDir)
                    .bindCores(bindCores)
                    .grace(Duration.ofMillis(Math.round(1000 * seconds("--grace-period", gracePeriod))))
                    .joinTimeout(Duration.ofMillis(Math.round(1000 * seconds("--join-timeout", joinTimeout))))
                    .secret(secret(LaunchOptions.parseNodes(nnodes)[1]))
                    .elastic(LaunchOptions.parseCount("--elastic", elastic, false))
                    .build();
            worker = WorkerProgram.resolve(
                    program,
                    classPath != null ? classPath : System.getenv(CLASSPATH_ENV),
                    System.getProperty(WORKERS_CLASSPATH, System.getProperty("java.class.path")));
        } catch (IllegalArgumentException e) {
            return badInput(e.getMessage());
        }
        try {
            return new Launcher(options, worker).run().exitCode();
        } catch (IllegalArgumentException e) {
            return badInput(e.getMessage());
        } catch (IOException e) {
            err().println(spec.qualifiedName() + ": " + e.getMessage());
            err().flush();
            return 1;
        }
    }

    private static double seconds(String option, String text) {
        try {
            double s = Double.parseDouble(text.trim());
            if (s < 0 || Double.isNaN(s) || s > 86_400) {
                throw new NumberFormatException();
            }
            return s;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(
                    option + " must be a number of seconds in [0, 86400], got '" + text + "'");
        }
    }

    private java.io.PrintWriter err() {
        return spec.commandLine().getErr();
    }

    private int badInput(String message) {
        String name = spec.qualifiedName();
        err().println(name + ": " + message);
        err().println("nothing was started; see " + name + " --help");
        err().flush();
        return BAD_INPUT;
    }
}
