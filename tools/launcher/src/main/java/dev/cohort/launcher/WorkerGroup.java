package dev.cohort.launcher;

import dev.cohort.api.LaunchEnvironment;
import dev.cohort.api.Topology;
import dev.cohort.runtime.SharedMemoryFiles;
import java.io.File;
import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;

/**
 * One round of this node's workers: started together, watched, stopped together. Each worker
 * gets the inherited environment, the caller's extra variables, and the launch contract of
 * {@link LaunchEnvironment}; its output goes through {@link OutputPump}s; its exit is handed to
 * {@code onExit} as (local rank, exit code) from a JDK thread. Once stopped, it removes the
 * {@code /dev/shm} files of this run that its workers left (see {@link SharedMemoryFiles}).
 */
final class WorkerGroup {

    private static final int LAST_LINES = 20;
    private static final File NO_INPUT = new File("/dev/null");

    private final List<Worker> workers;
    /** The launch contract the workers got (less their ranks): names this run's shared-memory files. */
    private final Map<String, String> contract;

    private final Console console;

    private record Worker(
            int rank, Process process, OutputPump out, OutputPump err, OutputPump.LastLines last, Writer log) {}

    /**
     * What one round's workers are started with: this node's options, rank 0's port, the program,
     * the round ({@code COHORT_RESTART_COUNT}), variables beyond the launch contract, where their
     * lines go, the guard that kills them if the launcher dies, and what to call when one exits
     * (local rank, exit code; from a JDK thread).
     */
    record Round(
            LaunchOptions options,
            int masterPort,
            WorkerProgram program,
            int restart,
            Map<String, String> env,
            Console console,
            OrphanGuard guard,
            BiConsumer<Integer, Integer> onExit) {

        /** The launch contract of the worker at {@code topology}. */
        LaunchEnvironment contract(Topology topology) {
            return new LaunchEnvironment(options.masterAddr(), masterPort, topology, restart, options.runId());
        }
    }

    private WorkerGroup(List<Worker> workers, Map<String, String> contract, Console console) {
        this.workers = workers;
        this.contract = contract;
        this.console = console;
    }

    /**
     * Starts {@code options.nprocPerNode()} workers for round {@code restart}. When one fails to
     * start, those already started are stopped and the exception is thrown.
     */
    static WorkerGroup start(Round round, NodePlacement placement) throws IOException {
        LaunchOptions options = round.options();
        List<Worker> started = new ArrayList<>();
        Map<String, String> runContract = round.contract(
                        new Topology(0, placement.worldSize(), 0, options.nprocPerNode(), placement.groupRank()))
                .toMap();
        try {
            for (int local = 0; local < options.nprocPerNode(); local++) {
                int rank = placement.globalRank(local);
                Topology topology =
                        new Topology(rank, placement.worldSize(), local, options.nprocPerNode(), placement.groupRank());
                LaunchEnvironment contract = round.contract(topology);
                List<String> command = new ArrayList<>(ProcessTreeKiller.heldSession());
                command.addAll(CoreBinding.prefix(options, local));
                command.addAll(round.program().command());
                ProcessBuilder pb = new ProcessBuilder(command);
                Map<String, String> env = pb.environment();
                env.putAll(round.env());
                env.putAll(contract.toMap());
                Writer log = openLog(options.logDir(), rank, round.restart());
                Process process;
                try {
                    process = startGuarded(pb, round.guard());
                } catch (IOException e) {
                    closeQuietly(log);
                    throw new IOException(
                            "cannot start rank " + rank + " (" + round.program().description() + "): " + e.getMessage(),
                            e);
                }
                OutputPump.LastLines last = new OutputPump.LastLines(LAST_LINES);
                OutputPump out = OutputPump.start(process.getInputStream(), rank, false, round.console(), log, last);
                OutputPump err = OutputPump.start(process.getErrorStream(), rank, true, round.console(), log, last);
                started.add(new Worker(rank, process, out, err, last, log));
                int localRank = local;
                process.onExit().thenAccept(p -> round.onExit().accept(localRank, p.exitValue()));
            }
        } catch (IOException | RuntimeException e) {
            new WorkerGroup(started, runContract, round.console()).stop(Duration.ZERO, round.guard());
            throw e;
        }
        return new WorkerGroup(started, runContract, round.console());
    }

    /** Where mpirun says which rank ended the job. */
    private static final java.util.regex.Pattern MPIRUN_NAMES_RANK = java.util.regex.Pattern.compile(
            "process rank (\\d+)|Process name: \\[\\[\\d+,\\d+\\],(\\d+)\\]|MPI_ABORT was invoked on rank (\\d+)");
    /** The variables of the launch contract that are the same for every rank (mpirun gives the ranks). */
    private static final List<String> JOB_WIDE = List.of(LaunchEnvironment.RUN_ID, LaunchEnvironment.RESTART_COUNT);

    /**
     * Starts this node's workers as one MPI job: a single {@code mpirun -np N} whose ranks get
     * their ranks and hosts from Open MPI, and from the launcher the job-wide variables (run id,
     * restart count, threads, backend) through {@code -x}. Its tagged output goes to each rank's
     * lines and log as with separate workers; when it exits, the rank mpirun names (or rank 0)
     * exits with its code, or every rank with 0. Ranks are not bound to cores unless
     * {@code --bind-cores} (Open MPI binds by default, which would put a JVM's threads on one core).
     */
    static WorkerGroup startThroughMpirun(Round round) throws IOException {
        LaunchOptions options = round.options();
        if (options.nnodes() > 1) {
            throw new IOException("the launcher starts an MPI job on one node only; across nodes start mpirun yourself "
                    + "with your hostfile (mpirun -np N --hostfile FILE java ... --distributed-backend mpi)");
        }
        int n = options.nprocPerNode();
        Map<String, String> runContract =
                round.contract(new Topology(0, n, 0, n, 0)).toMap();
        List<String> command = new ArrayList<>(ProcessTreeKiller.heldSession());
        command.addAll(List.of(
                mpirun(),
                "--tag-output",
                "--oversubscribe",
                "-np",
                Integer.toString(n),
                "--bind-to",
                options.bindCores() ? "core" : "none"));
        if ("root".equals(System.getProperty("user.name"))) {
            command.add("--allow-run-as-root");
        }
        Map<String, String> env = new java.util.LinkedHashMap<>(round.env());
        for (String name : JOB_WIDE) {
            if (runContract.containsKey(name)) {
                env.put(name, runContract.get(name));
            }
        }
        for (String name : env.keySet()) {
            command.add("-x");
            command.add(name);
        }
        // Through sh: mpirun rewrites a command line whose round.program() is java (for Open MPI's own Java bindings).
        command.addAll(List.of("/bin/sh", "-c", "exec \"$0\" \"$@\""));
        command.addAll(argumentFile(round.program().command()));
        ProcessBuilder pb = new ProcessBuilder(command);
        pb.environment().putAll(env);
        Writer[] logs = new Writer[n];
        OutputPump.LastLines[] lasts = new OutputPump.LastLines[n];
        for (int r = 0; r < n; r++) {
            logs[r] = openLog(options.logDir(), r, round.restart());
            lasts[r] = new OutputPump.LastLines(LAST_LINES);
        }
        Process process;
        try {
            process = startGuarded(pb, round.guard());
        } catch (IOException e) {
            for (Writer log : logs) {
                closeQuietly(log);
            }
            throw new IOException(
                    "cannot start " + mpirun() + " for the mpi engine (install Open MPI: Debian's "
                            + "openmpi-bin; or name it with COHORT_MPIRUN): " + e.getMessage(),
                    e);
        }
        java.util.concurrent.atomic.AtomicInteger named = new java.util.concurrent.atomic.AtomicInteger(-1);
        java.util.function.Consumer<String> mpirunLine = line -> {
            round.console().workerLine(0, true, "mpirun: " + line);
            java.util.regex.Matcher m = MPIRUN_NAMES_RANK.matcher(line);
            if (m.find()) {
                String rank = m.group(1) != null ? m.group(1) : m.group(2) != null ? m.group(2) : m.group(3);
                named.compareAndSet(-1, Integer.parseInt(rank));
            }
            for (OutputPump.LastLines last : lasts) {
                last.add("mpirun: " + line);
            }
        };
        OutputPump out =
                OutputPump.startTagged(process.getInputStream(), false, round.console(), logs, lasts, mpirunLine);
        OutputPump err =
                OutputPump.startTagged(process.getErrorStream(), true, round.console(), logs, lasts, mpirunLine);
        List<Worker> workers = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            workers.add(new Worker(r, process, out, err, lasts[r], logs[r]));
        }
        process.onExit().thenAccept(p -> {
            int code = p.exitValue();
            if (code == 0) {
                for (int r = 0; r < n; r++) {
                    round.onExit().accept(r, 0);
                }
                return;
            }
            long deadline = System.nanoTime() + 1_000_000_000L;
            out.await(OutputPump.millisLeft(deadline));
            err.await(OutputPump.millisLeft(deadline));
            int rank = named.get();
            round.onExit().accept(rank >= 0 && rank < n ? rank : 0, code);
        });
        return new WorkerGroup(workers, runContract, round.console());
    }

    /**
     * A java command with its arguments in an argument file ({@code java @FILE}): mpirun drops
     * empty arguments, which a program's options may hold. Other programs pass as they are.
     */
    private static List<String> argumentFile(List<String> command) throws IOException {
        if (command.isEmpty()
                || !Path.of(command.get(0)).getFileName().toString().equals("java")) {
            return command;
        }
        StringBuilder text = new StringBuilder();
        for (String arg : command.subList(1, command.size())) {
            text.append('"')
                    .append(arg.replace("\\", "\\\\").replace("\"", "\\\""))
                    .append("\"\n");
        }
        Path file = Files.createTempFile("cohort-mpirun-", ".args");
        file.toFile().deleteOnExit();
        Files.writeString(file, text, StandardCharsets.UTF_8);
        return List.of(command.get(0), "@" + file);
    }

    /** Open MPI's launcher: {@code COHORT_MPIRUN}, else {@code mpirun} from the PATH. */
    private static String mpirun() {
        String set = System.getenv("COHORT_MPIRUN");
        return set != null && !set.isBlank() ? set : "mpirun";
    }

    private static Writer openLog(Path dir, int rank, int restart) throws IOException {
        if (dir == null) {
            return null;
        }
        Files.createDirectories(dir);
        Writer w = Files.newBufferedWriter(
                dir.resolve("rank-" + rank + ".log"),
                StandardCharsets.UTF_8,
                StandardOpenOption.CREATE,
                StandardOpenOption.APPEND);
        w.write("=== cohort: rank " + rank + ", restart " + restart + " ===\n");
        w.flush();
        return w;
    }

    List<ProcessHandle> processes() {
        List<ProcessHandle> handles = new ArrayList<>();
        workers.stream().map(w -> w.process.toHandle()).distinct().forEach(handles::add);
        return handles;
    }

    /**
     * Starts {@code pb}'s command (prefixed with {@link ProcessTreeKiller#heldSession()}) and lets
     * it run once {@code guard} watches its group. Its input then ends, as /dev/null's would; where
     * setsid is missing, its input is /dev/null from the start.
     */
    private static Process startGuarded(ProcessBuilder pb, OrphanGuard guard) throws IOException {
        boolean held = !ProcessTreeKiller.sessionWrapper().isEmpty();
        if (!held && NO_INPUT.exists()) {
            pb.redirectInput(NO_INPUT);
        }
        Process process = pb.start();
        if (held) {
            guard.watch(process.pid());
            try (java.io.OutputStream go = process.getOutputStream()) {
                go.write('\n');
            } catch (IOException e) {
                // It ended already: its exit is seen as any worker's.
            }
        }
        return process;
    }

    // Each worker leads its own process group when started through setsid.
    private List<Long> processGroups() {
        List<Long> groups = new ArrayList<>();
        if (!ProcessTreeKiller.sessionWrapper().isEmpty()) {
            workers.stream().map(w -> w.process.pid()).distinct().forEach(groups::add);
        }
        return groups;
    }

    /** The failure of local worker {@code localRank}, after waiting up to {@code drainMillis} for its last output. */
    WorkerFailure failure(int localRank, int restart, int exitCode, long drainMillis) {
        Worker w = workers.get(localRank);
        long deadline = System.nanoTime() + drainMillis * 1_000_000L;
        w.out.await(OutputPump.millisLeft(deadline));
        w.err.await(OutputPump.millisLeft(deadline));
        return new WorkerFailure(restart, w.rank, new ExitStatus(exitCode), w.last.snapshot());
    }

    /**
     * Stops every worker's process tree (SIGTERM, SIGKILL after {@code grace}), tells {@code guard}
     * they are gone, closes the logs, and removes the shared-memory files they left.
     */
    void stop(Duration grace, OrphanGuard guard) {
        List<Long> groups = processGroups();
        ProcessTreeKiller.stop(processes(), groups, grace);
        groups.forEach(guard::forget);
        long deadline = System.nanoTime() + 1_000_000_000L;
        for (Worker w : workers) {
            w.out.await(OutputPump.millisLeft(deadline));
            w.err.await(OutputPump.millisLeft(deadline));
            closeQuietly(w.log);
        }
        removeSharedMemoryLeftovers();
    }

    /**
     * The shm engine unlinks its file once every rank attached; a crash before that leaves it in
     * {@code /dev/shm}, holding memory until reboot. This node's workers are dead now, so every file
     * of this run (this restart or earlier) is garbage.
     */
    private void removeSharedMemoryLeftovers() {
        SharedMemoryFiles.Removal removal = SharedMemoryFiles.removeLeftovers(SharedMemoryFiles.DIRECTORY, contract);
        if (!removal.removed().isEmpty()) {
            console.message("removed " + removal.removed().size() + " shared-memory file(s) the workers left: "
                    + removal.removed());
        }
        for (String failure : removal.failures()) {
            console.message("cannot remove a shared-memory file the workers left (remove it by hand): " + failure);
        }
    }

    private static void closeQuietly(Writer w) {
        if (w == null) {
            return;
        }
        synchronized (w) {
            try {
                w.close();
            } catch (IOException e) {
                // Nothing to do about a log that cannot be closed.
            }
        }
    }
}
