package dev.cohort.launcher;

import dev.cohort.api.Backends;
import dev.cohort.api.JoinRecord;
import dev.cohort.api.LaunchEnvironment;
import dev.cohort.api.ProgressReporter;
import dev.cohort.launcher.control.Channel;
import dev.cohort.launcher.control.Command;
import dev.cohort.launcher.control.ControlClient;
import dev.cohort.launcher.control.ControlServer;
import dev.cohort.launcher.control.Coordinator;
import dev.cohort.launcher.control.LocalCoordinator;
import dev.cohort.launcher.control.Report;
import dev.cohort.runtime.ComputeThreads;
import dev.cohort.runtime.elastic.ElasticJob;
import dev.cohort.runtime.flight.FlightRecorder;
import dev.cohort.runtime.flight.FlightReport;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;

/**
 * Starts, watches and restarts this node's group of workers: what {@code ./cohort run} does,
 * as a Java API.
 *
 * <pre>{@code
 * LaunchOptions options = LaunchOptions.builder().nprocPerNode(2).maxRestarts(1).build();
 * WorkerProgram program = WorkerProgram.mainClass("com.example.Train", List.of("--epochs", "3"));
 * LaunchResult result = new Launcher(options, program).run();   // blocks; stop() from another thread
 * }</pre>
 *
 * <p>One thread (the caller of {@link #run()}) owns the group and handles events in order:
 * worker exits (from JDK threads) and the referee's commands (see {@link
 * dev.cohort.launcher.control.Referee}). On the first non-zero exit of a round, this node stops
 * its other workers, prints the failure and reports it; the referee then restarts the group on
 * every node or ends the run. While {@link #run()} runs, a shutdown hook kills every worker tree,
 * so no worker outlives a launcher stopped by SIGTERM or Ctrl-C, and an {@link OrphanGuard}
 * kills them if the launcher itself is killed by SIGKILL. A Launcher runs once.
 */
public final class Launcher implements AutoCloseable {

    /** The exit code of a run ended by {@link #stop()} (as if by SIGTERM). */
    public static final int STOPPED_EXIT_CODE = 143;

    private static final long DRAIN_MILLIS = 1000;

    private sealed interface Event {}

    private record WorkerExited(int round, int localRank, int code) implements Event {}

    private record FromReferee(Command command) implements Event {}

    private record StopRequested() implements Event {}

    private final LaunchOptions options;
    private final WorkerProgram program;
    private Console console = Console.system();
    private int cores = Runtime.getRuntime().availableProcessors();
    private final BlockingQueue<Event> events = new LinkedBlockingQueue<>();
    private final Object lock = new Object();
    private volatile boolean stopRequested;
    /** What node 0 said of the job (across nodes; null on one node): see {@link Command.Job}. */
    private Command.Job job;

    private WorkerGroup group;
    private OrphanGuard guard;
    /** Where this node's Java workers record that they joined a group ({@link JoinRecord}); null for a command. */
    private java.nio.file.Path joinRecords;
    /** Where this node's workers keep their flight records ({@link FlightRecorder#ENV_DIR}). */
    private java.nio.file.Path flightRecords;
    /** Whether {@link #flightRecords} is the launcher's own, deleted at the end (not one the user named). */
    private boolean ownFlightRecords;

    private boolean ran;

    public Launcher(LaunchOptions options, WorkerProgram program) {
        this.options = Objects.requireNonNull(options, "options");
        this.program = Objects.requireNonNull(program, "program");
    }

    /** Where workers' lines and the launcher's messages go (default: this process's stdout/stderr). */
    public Launcher console(Console console) {
        this.console = Objects.requireNonNull(console, "console");
        return this;
    }

    /** The cores split among this node's workers (default: the available processors). */
    public Launcher cores(int cores) {
        if (cores < 1) {
            throw new IllegalArgumentException("cores must be >= 1, got " + cores);
        }
        this.cores = cores;
        return this;
    }

    /**
     * Runs the group until every worker finished, restarts ran out, or {@link #stop()}.
     *
     * @throws IllegalArgumentException before any worker starts, when a port is taken
     * @throws IOException              when this node cannot join node 0
     */
    public LaunchResult run() throws IOException {
        synchronized (lock) {
            if (ran) {
                throw new IllegalStateException("a Launcher runs once; create a new one to launch again");
            }
            ran = true;
        }
        int masterPort = options.masterPort();
        ControlServer server = null;
        if (options.nodeRank() == 0) {
            if (masterPort == 0) {
                masterPort = Ports.pickFree();
            } else {
                Ports.requireFree(masterPort, "--master-port");
            }
            if (options.nnodes() > 1) {
                server = new ControlServer(
                        channel(),
                        options.runId(),
                        options.minNodes(),
                        options.nnodes(),
                        options.maxRestarts(),
                        options.elastic());
            }
        }
        guard = OrphanGuard.start();
        Thread hook = new Thread(this::killWorkers, "cohort-launcher-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        Coordinator coordinator = options.nnodes() == 1
                ? new LocalCoordinator(
                        options.maxRestarts(),
                        options.nprocPerNode(),
                        options.elastic(),
                        options.masterAddr(),
                        options.secret())
                : new ControlClient(
                        channel(), options.runId(), options.nodeRank(), options.nnodesSpec(), options.nprocPerNode());
        try {
            if (program.isJava()) {
                joinRecords = java.nio.file.Files.createTempDirectory("cohort-joined-");
            }
            String named = inheritedEnvironment().get(FlightRecorder.ENV_DIR);
            ownFlightRecords = named == null || named.isBlank();
            flightRecords = ownFlightRecords
                    ? java.nio.file.Files.createTempDirectory("cohort-flight-")
                    : java.nio.file.Path.of(named);
            if (options.nnodes() > 1) {
                console.message("node " + options.nodeRank() + " of " + options.nnodesSpec() + ": joining the group at "
                        + options.masterAddr() + ":" + options.controlPort());
            }
            coordinator.open(c -> events.add(new FromReferee(c)));
            return loop(coordinator, masterPort);
        } finally {
            killWorkers();
            guard.close();
            coordinator.close();
            deleteJoinRecords();
            if (ownFlightRecords) {
                deleteFlightRecords(true);
            }
            if (server != null) {
                server.close();
            }
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException e) {
                // The JVM is shutting down; the hook runs anyway.
            }
        }
    }

    /** Node 0's control channel, with more than one node. */
    private Channel channel() {
        return new Channel(options.masterAddr(), options.controlPort(), options.joinTimeout(), options.secret());
    }

    private LaunchResult loop(Coordinator coordinator, int masterPort) {
        Map<String, String> threads = ComputeThreads.variables(inheritedEnvironment());
        List<WorkerFailure> failures = new ArrayList<>();
        int round = -1;
        boolean reported = true;
        int finished = 0;
        int lost = 0; // this node's workers lost in an elastic round
        while (true) {
            Event event;
            try {
                event = events.poll(1, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                event = new StopRequested();
            }
            if (event == null) {
                continue;
            }
            if (event instanceof StopRequested || stopRequested) {
                return new LaunchResult(STOPPED_EXIT_CODE, Math.max(round, 0), failures, "stopped on request");
            } else if (event instanceof FromReferee f && f.command() instanceof Command.Exit exit) {
                stopGroup();
                boolean several = options.nnodes() > 1 || options.nprocPerNode() > 1; // one worker may train alone
                if (exit.code() == 0 && several && joinRecords != null && !JoinRecord.anyIn(joinRecords)) {
                    console.message(noneJoined());
                } else {
                    String how = exit.code() == 0 ? "run finished: " : "run failed (exit " + exit.code() + "): ";
                    console.message(how + exit.message());
                }
                return new LaunchResult(exit.code(), Math.max(round, 0), failures, exit.message());
            } else if (event instanceof FromReferee f && f.command() instanceof Command.Job job) {
                this.job = job;
                if (job.nodes().size() < options.nnodes()) {
                    console.message("the run starts with nodes " + job.nodes() + " of --nnodes " + options.nnodesSpec()
                            + " (the join timeout passed without the others)");
                }
            } else if (event instanceof FromReferee f && f.command() instanceof Command.Start start) {
                stopGroup();
                round = start.round();
                reported = false;
                finished = 0;
                lost = 0;
                NodePlacement placement = placement();
                if (start.join()) {
                    console.message("joining the running group (elastic): starting " + options.nprocPerNode()
                            + " worker(s) (ranks " + placement.globalRank(0) + ".."
                            + placement.globalRank(options.nprocPerNode() - 1) + "), " + program.description()
                            + "; they take part from the members' next boundary");
                } else if (round == 0) {
                    console.message("starting " + options.nprocPerNode() + " worker(s) (ranks "
                            + placement.globalRank(0) + ".." + placement.globalRank(options.nprocPerNode() - 1) + " of "
                            + placement.worldSize() + "), " + program.description() + ", master "
                            + options.masterAddr() + ":" + masterPort);
                    console.message(ComputeThreads.describe(threads, cores, options.nprocPerNode()));
                    console.message(backendDefault());
                } else {
                    console.message("restarting the group: restart " + round + " of " + options.maxRestarts());
                }
                Map<String, String> env = new java.util.LinkedHashMap<>(options.environment());
                env.putAll(threads);
                if (!inheritedEnvironment().containsKey(Backends.ENV_BACKEND)) {
                    env.put(Backends.ENV_BACKEND, Backends.AUTO);
                }
                // The console renders the workers' progress markers (rank 0's) and shows none.
                if (!inheritedEnvironment().containsKey(ProgressReporter.ENV)) {
                    env.put(ProgressReporter.ENV, ProgressReporter.LAUNCHER);
                }
                env.putAll(jobVariables());
                if (joinRecords != null) {
                    env.put(JoinRecord.ENV, joinRecords.toString());
                }
                deleteFlightRecords(false); // the last round's: its ranks may not be this round's
                env.put(FlightRecorder.ENV_DIR, flightRecords.toString());
                if (options.elastic() > 0) {
                    if (throughMpirun(env)) {
                        console.message(
                                "--elastic does not run under mpirun (an MPI job cannot lose a rank and go on); "
                                        + "use another engine, or --max-restarts");
                        reported = true;
                        coordinator.report(new Report.Failed(round, options.nodeRank(), 2, "--elastic with mpi"));
                        continue;
                    }
                    env.put(ElasticJob.ENV_STORE, coordinator.elasticStore());
                    if (start.join()) {
                        env.put(ElasticJob.ENV_JOIN, "1");
                    }
                }
                int r = round;
                try {
                    synchronized (lock) {
                        if (stopRequested) {
                            continue;
                        }
                        BiConsumer<Integer, Integer> onExit =
                                (local, code) -> events.add(new WorkerExited(r, local, code));
                        WorkerGroup.Round starting =
                                new WorkerGroup.Round(options, masterPort, program, round, env, console, guard, onExit);
                        group = throughMpirun(env)
                                ? WorkerGroup.startThroughMpirun(starting)
                                : WorkerGroup.start(starting, placement);
                    }
                } catch (IOException e) {
                    console.message(e.getMessage());
                    reported = true;
                    coordinator.report(new Report.Failed(round, options.nodeRank(), 127, e.getMessage()));
                }
            } else if (event instanceof FromReferee f && f.command() instanceof Command.Regroup regroup) {
                if (regroup.round() == round) {
                    console.message(regroup.members().size() + " worker(s) go on as generation "
                            + regroup.generation() + " of the group (elastic)"
                            + " after: " + regroup.why());
                }
            } else if (event instanceof FromReferee f && f.command() instanceof Command.Stop stop) {
                if (stop.round() == round && !reported) {
                    console.message(
                            options.elastic() > 0
                                    ? "the group cannot go on: fewer than --elastic " + options.elastic()
                                            + " workers would be " + "left; stopping this node's workers"
                                    : "another node's worker failed; stopping this node's workers" + flightReport());
                    stopGroup();
                    reported = true;
                    coordinator.report(new Report.Stopped(round, options.nodeRank()));
                }
            } else if (event instanceof WorkerExited exited && exited.round() == round && !reported) {
                if (exited.code() == 0) {
                    if (++finished == options.nprocPerNode() - lost) {
                        reported = true;
                        stopGroup();
                        coordinator.report(new Report.Done(round, options.nodeRank()));
                    }
                    continue;
                }
                WorkerFailure failure = group.failure(exited.localRank(), round, exited.code(), DRAIN_MILLIS);
                failures.add(failure);
                String flight = flightReport();
                String where = options.nnodes() > 1 ? " on node " + options.nodeRank() : "";
                if (options.elastic() > 0) {
                    // The referee decides: the others go on as the next generation, or the round fails.
                    lost++;
                    console.message(failure.summary()
                            + (round > 0 ? " (restart " + round + ")" : "")
                            + lastLines(failure)
                            + flight);
                    coordinator.report(new Report.Lost(
                            round,
                            options.nodeRank(),
                            failure.rank(),
                            exited.code(),
                            "rank " + failure.rank() + where + " "
                                    + failure.status().describe()));
                    if (finished == options.nprocPerNode() - lost) {
                        reported = true;
                        stopGroup();
                        coordinator.report(new Report.Done(round, options.nodeRank()));
                    }
                    continue;
                }
                console.message(failure.summary() + (round > 0 ? " (restart " + round + ")" : "")
                        + "; stopping the other workers" + lastLines(failure) + flight);
                stopGroup();
                reported = true;
                coordinator.report(new Report.Failed(
                        round,
                        options.nodeRank(),
                        exited.code(),
                        "rank " + failure.rank() + where + " "
                                + failure.status().describe()));
            }
        }
    }

    /**
     * Whether the workers run the mpi engine ({@code --distributed-backend mpi} among their arguments,
     * or {@value Backends#ENV_BACKEND}{@code =mpi}): then they are started as one MPI job, through
     * {@code mpirun}, which gives them their ranks.
     */
    private boolean throughMpirun(Map<String, String> env) {
        List<String> command = program.command();
        for (int i = 0; i < command.size(); i++) {
            String arg = command.get(i);
            if (arg.equals("--distributed-backend=" + MPI)
                    || arg.equals("--distributed-backend")
                            && i + 1 < command.size()
                            && command.get(i + 1).equalsIgnoreCase(MPI)) {
                return true;
            }
        }
        String named = env.containsKey(Backends.ENV_BACKEND)
                ? env.get(Backends.ENV_BACKEND)
                : inheritedEnvironment().getOrDefault(Backends.ENV_BACKEND, "");
        return MPI.equalsIgnoreCase(named.trim());
    }

    /** The engine the launcher starts through mpirun. */
    private static final String MPI = "mpi";

    /**
     * Which backend workers that name none get: {@link Backends#AUTO} (set as
     * {@value Backends#ENV_BACKEND}) unless the launcher's environment names one. The workers run
     * on this JVM's JDK, so the choice they make is the one said here (or gloo, when the chosen
     * engine is not on their class path; they say so). Across nodes, they choose by the oldest
     * JDK of any node ({@link Command.Job}), so that every node chooses alike.
     */
    private String backendDefault() {
        String set = inheritedEnvironment().get(Backends.ENV_BACKEND);
        if (set != null) {
            return "workers that choose no --distributed-backend use " + Backends.ENV_BACKEND + "=" + set
                    + (options.environment().containsKey(Backends.ENV_BACKEND) ? " (--backend)" : "")
                    + djlAdvice(set.trim().toLowerCase(java.util.Locale.ROOT));
        }
        NodePlacement placement = placement();
        Map<String, String> env = new java.util.HashMap<>(Map.of(
                LaunchEnvironment.RANK, Integer.toString(placement.globalRank(0)),
                LaunchEnvironment.WORLD_SIZE, Integer.toString(placement.worldSize()),
                LaunchEnvironment.LOCAL_RANK, "0",
                LaunchEnvironment.LOCAL_WORLD_SIZE, Integer.toString(options.nprocPerNode()),
                LaunchEnvironment.GROUP_RANK, Integer.toString(placement.groupRank())));
        env.putAll(jobVariables());
        Backends.AutoChoice auto = Backends.auto(env, Runtime.version().feature());
        return "workers that choose no --distributed-backend, or auto, use " + auto.backend() + " (" + auto.reason()
                + "; " + Backends.ENV_BACKEND + "=" + Backends.AUTO + ")" + djlAdvice(auto.backend());
    }

    /** The engines that load JavaCPP's libtorch, which cannot share a process with DJL's. */
    static final java.util.Set<String> LOADING_LIBTORCH = java.util.Set.of("gloo");

    /** What a program that uses DJL should do instead of {@code engine}; empty when it may use it. */
    private String djlAdvice(String engine) {
        return LOADING_LIBTORCH.contains(engine) && program.usesDjl()
                ? djlAdvice(engine, Runtime.version().feature())
                : "";
    }

    /** {@link #djlAdvice(String)} for a program that uses DJL, with workers on JDK {@code jdk}. */
    static String djlAdvice(String engine, int jdk) {
        return "; but this program uses DJL (" + WorkerProgram.DJL_CLASS + " is on its class path), whose libtorch "
                + "cannot share a process with the one " + engine + " loads (JavaCPP's): run it with --backend tcp"
                + (jdk >= 22 ? " (or shm, on one host)" : "") + ", or its own --distributed-backend tcp";
    }

    private NodePlacement placement() {
        return job == null ? NodePlacement.of(options) : NodePlacement.of(options, job);
    }

    /**
     * What workers learn of the whole job beyond the launch contract: the number of nodes, and
     * across nodes the oldest JDK of any node (by which {@code auto} chooses, see {@link Command.Job}).
     */
    private Map<String, String> jobVariables() {
        Map<String, String> vars = new java.util.HashMap<>();
        vars.put(
                LaunchEnvironment.GROUP_WORLD_SIZE, Integer.toString(placement().groups()));
        if (job != null) {
            vars.put(Backends.ENV_OLDEST_JDK, Integer.toString(job.oldestJdk()));
        }
        return vars;
    }

    /** The last line of a run whose several Java workers all exited 0 without ever joining a group. */
    private String noneJoined() {
        String workers = options.nnodes() > 1 ? "no worker on this node" : "no worker";
        return "WARNING: every worker exited 0, but " + workers + " joined a process group, so nothing was trained "
                + "together: the program never called its backend's initialize() (directly or through ElasticJob), "
                + "or it exited before, e.g. its own argument parser rejected "
                + "an argument (such as --distributed-backend) and printed its usage; see the workers' output above";
    }

    private void deleteJoinRecords() {
        if (joinRecords == null) {
            return;
        }
        try (var records = java.nio.file.Files.list(joinRecords)) {
            for (java.nio.file.Path p : records.toList()) {
                java.nio.file.Files.deleteIfExists(p);
            }
            java.nio.file.Files.deleteIfExists(joinRecords);
        } catch (IOException e) {
            // A temporary folder of empty files; the system's cleaning removes what is left.
        }
    }

    /**
     * "\nflight records (DIR): rank 1 completed allreduce #42 and issued nothing since; rank 0
     * waits in allreduce #43 ...": where this node's ranks stand, from their flight records; empty
     * when none recorded a call.
     */
    private String flightReport() {
        try {
            FlightReport report = FlightReport.of(flightRecords);
            if (report.isEmpty()) {
                return "";
            }
            String where = ownFlightRecords ? "" : " (" + flightRecords + ")";
            return "\nflight records" + where + ": " + report.summary();
        } catch (IOException | RuntimeException e) {
            return "\nthe flight records in " + flightRecords + " cannot be read: " + e.getMessage();
        }
    }

    /** Deletes the rings in the flight-record folder, and with {@code folder} the folder. */
    private void deleteFlightRecords(boolean folder) {
        if (flightRecords == null || !java.nio.file.Files.isDirectory(flightRecords)) {
            return;
        }
        try (var records = java.nio.file.Files.list(flightRecords)) {
            for (java.nio.file.Path p : records.filter(
                            p -> p.getFileName().toString().matches("rank-\\d+\\.flight(\\.\\d+\\.new)?"))
                    .toList()) {
                java.nio.file.Files.deleteIfExists(p);
            }
            if (folder) {
                java.nio.file.Files.deleteIfExists(flightRecords);
            }
        } catch (IOException e) {
            // A temporary folder: the system's cleaning removes what is left.
        }
    }

    private static String lastLines(WorkerFailure failure) {
        if (failure.lastLines().isEmpty()) {
            return "; it printed nothing";
        }
        StringBuilder sb = new StringBuilder("; its last lines:");
        failure.lastLines().forEach(l -> sb.append("\n  | ").append(l));
        return sb.toString();
    }

    private Map<String, String> inheritedEnvironment() {
        Map<String, String> env = new java.util.HashMap<>(System.getenv());
        env.putAll(options.environment());
        return env;
    }

    // The group stays visible until it is dead, so that a concurrent killWorkers() (the shutdown
    // hook) also waits for it rather than letting the JVM exit while workers live.
    private void stopGroup() {
        WorkerGroup g;
        synchronized (lock) {
            g = group;
        }
        if (g != null) {
            g.stop(options.grace(), guard);
            synchronized (lock) {
                if (group == g) {
                    group = null;
                }
            }
        }
    }

    // From the shutdown hook or stop(): no group starts after this, the current one is killed.
    private void killWorkers() {
        synchronized (lock) {
            stopRequested = true;
        }
        stopGroup();
    }

    /**
     * Stops every worker (SIGTERM, SIGKILL after the grace period) and makes {@link #run()}
     * return with {@link #STOPPED_EXIT_CODE}. Safe from any thread; returns once the workers are dead.
     */
    public void stop() {
        killWorkers();
        events.add(new StopRequested());
    }

    @Override
    public void close() {
        stop();
    }
}
