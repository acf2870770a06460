package dev.cohort.launcher;

import dev.cohort.api.Backends;
import dev.cohort.api.OptionSettings;
import dev.cohort.cli.Commands;
import dev.cohort.cli.OptionDefaults;
import dev.cohort.runtime.auth.JobSecret;
import dev.cohort.runtime.flight.Tracing;
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

// The usage text (description, exit codes, each option under its longest name) is in LauncherMain.properties.
/** {@code ./cohort run [options] -- PROGRAM [ARGS...]}: see {@link Launcher}. Exit code 2 = bad input. */
@Command(
        name = "cohort run",
        resourceBundle = "dev.cohort.launcher.LauncherMain",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        versionProvider = Commands.Version.class)
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

    @Option(names = "--nproc-per-node", paramLabel = "N|auto", defaultValue = "1")
    String nprocPerNode;

    @Option(names = "--nnodes", paramLabel = "N|MIN:MAX", defaultValue = "1")
    String nnodes;

    @Option(names = "--node-rank", paramLabel = "K", defaultValue = "0")
    String nodeRank;

    @Option(names = "--master-addr", paramLabel = "HOST")
    String masterAddr;

    @Option(names = "--master-port", paramLabel = "PORT", defaultValue = "29500")
    String masterPort;

    @Option(names = "--control-port", paramLabel = "PORT", defaultValue = "0")
    String controlPort;

    @Option(names = "--max-restarts", paramLabel = "N", defaultValue = "0")
    String maxRestarts;

    @Option(names = "--run-id", paramLabel = "ID", defaultValue = "cohort")
    String runId;

    @Option(names = "--log-dir", paramLabel = "DIR")
    Path logDir;

    @Option(names = "--flight-dir", paramLabel = "DIR")
    Path flightDir;

    @Option(names = "--metrics-port", paramLabel = "PORT")
    String metricsPort;

    @Option(names = "--metrics-file", paramLabel = "FILE")
    Path metricsFile;

    @Option(names = "--trace", paramLabel = "DIR")
    Path trace;

    @Option(names = "--trace-events", paramLabel = "CATEGORY", split = ",")
    List<String> traceEvents;

    @Option(names = "--bind-cores")
    boolean bindCores;

    @Option(names = "--grace-period", paramLabel = "SECONDS", defaultValue = "5")
    String gracePeriod;

    @Option(names = "--join-timeout", paramLabel = "SECONDS", defaultValue = "60")
    String joinTimeout;

    @Option(names = "--elastic", paramLabel = "MIN", defaultValue = "0")
    String elastic;

    @Option(names = "--secret-file", paramLabel = "FILE")
    Path secretFile;

    @Option(names = "--insecure-no-secret")
    boolean insecureNoSecret;

    @Option(names = "--backend", paramLabel = "NAME")
    String backend;

    @Option(
            names = {"-cp", "--classpath", "--class-path"},
            paramLabel = "PATH")
    String classPath;

    @Spec
    CommandSpec spec;

    @Parameters(paramLabel = "PROGRAM", arity = "0..*", description = "after --: the program and its arguments")
    List<String> program = new ArrayList<>();

    /** The run's secret (see {@link LaunchOptions#secretFor}), warning when there is knowingly none. */
    private Optional<JobSecret> secret(int nodes) {
        Optional<JobSecret> secret = LaunchOptions.secretFor(nodes, secretFile, insecureNoSecret, System.getenv());
        if (secret.isEmpty()) {
            err().println(spec.qualifiedName() + ": WARNING: no job secret (--insecure-no-secret): every process "
                    + "that can reach this job's ports is trusted; see docs/SECURITY.md");
            err().flush();
        }
        return secret;
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
        LauncherMain main = new LauncherMain();
        CommandLine cli = Commands.standard(main);
        cli.setUnmatchedOptionsArePositionalParams(false);
        try {
            main.settings = OptionSettings.current();
            cli.setDefaultValueProvider(OptionDefaults.of(main.settings));
        } catch (IllegalArgumentException e) {
            main.settingsProblem = e; // said when the command runs
        }
        cli.getCommandSpec().usageMessage().footer(OptionDefaults.help());
        return cli;
    }

    /** Where options not on the command line come from; null where they cannot be read ({@link #settingsProblem}). */
    private OptionSettings settings;

    private IllegalArgumentException settingsProblem;

    @Override
    public Integer call() {
        LaunchOptions options;
        WorkerProgram worker;
        try {
            if (settingsProblem != null) {
                throw settingsProblem;
            }
            LaunchOptions.Builder builder = LaunchOptions.builder();
            // The workers read the same configuration file, wherever they start.
            settings.file().ifPresent(f -> builder.addEnvironment(OptionSettings.ENV_CONFIG, f.toString()));
            if (backend != null) {
                builder.addEnvironment(Backends.ENV_BACKEND, backend(backend));
            }
            if (metricsPort != null) {
                // Read by cohort-metrics' PrometheusEndpoint in rank 0.
                int port = LaunchOptions.parseCount("--metrics-port", metricsPort, false);
                if (port < 1 || port > 65535) {
                    throw new IllegalArgumentException("--metrics-port must be a port from 1 to 65535, got " + port);
                }
                builder.addEnvironment("COHORT_METRICS_PORT", Integer.toString(port));
            }
            if (metricsFile != null) {
                // Read by cohort-metrics' MetricsFile in rank 0.
                if (java.nio.file.Files.isDirectory(metricsFile)) {
                    throw new IllegalArgumentException("--metrics-file " + metricsFile + " is a folder; name a file");
                }
                builder.addEnvironment(
                        "COHORT_METRICS_FILE", metricsFile.toAbsolutePath().toString());
            }
            if (traceEvents != null && trace == null) {
                throw new IllegalArgumentException("--trace-events chooses what --trace DIR records; give --trace too");
            }
            if (trace != null) {
                try {
                    builder.addEnvironment(
                            Tracing.JAVA_OPTIONS,
                            Tracing.javaOptions(
                                    trace,
                                    System.getenv(Tracing.JAVA_OPTIONS),
                                    traceEvents == null ? Tracing.CATEGORIES.keySet() : traceEvents));
                    builder.addEnvironment(
                            Tracing.ENV_TRACE, trace.toAbsolutePath().toString());
                } catch (IOException e) {
                    throw new IllegalArgumentException("--trace " + trace + ": " + e.getMessage(), e);
                }
            }
            if (flightDir != null) {
                if (java.nio.file.Files.exists(flightDir) && !java.nio.file.Files.isDirectory(flightDir)) {
                    throw new IllegalArgumentException("--flight-dir " + flightDir + " exists and is not a folder");
                }
                builder.addEnvironment(
                        dev.cohort.runtime.flight.FlightRecorder.ENV_DIR,
                        flightDir.toAbsolutePath().toString());
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

    /**
     * "; --max-restarts is COHORT_MAX_RESTARTS in the environment" for each option {@code message}
     * names that the command line did not give and the settings did.
     */
    private String settingsBehind(String message) {
        if (settings == null) {
            return "";
        }
        StringBuilder s = new StringBuilder();
        for (var o : spec.options()) {
            String name = o.longestName();
            var source = settings.source(name);
            if (message.contains(name)
                    && source.isPresent()
                    && spec.commandLine().getParseResult() != null
                    && !spec.commandLine().getParseResult().hasMatchedOption(o)) {
                s.append("; ").append(name).append(" is ").append(source.get());
            }
        }
        return s.toString();
    }

    private java.io.PrintWriter err() {
        return spec.commandLine().getErr();
    }

    private int badInput(String message) {
        String name = spec.qualifiedName();
        err().println(name + ": " + message + settingsBehind(message));
        err().println("nothing was started; see " + name + " --help");
        err().flush();
        return BAD_INPUT;
    }
}
