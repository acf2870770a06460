package dev.cohort.launcher;

import dev.cohort.api.Topology;
import dev.cohort.api.LaunchEnvironment;
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

    private record Worker(int rank, Process process, OutputPump out, OutputPump err, OutputPump.LastLines last,
                          Writer log) {
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
    static WorkerGroup start(LaunchOptions options, NodePlacement placement, int masterPort, WorkerProgram program,
                             int restart,
                             Map<String, String> extraEnv, Console console, OrphanGuard guard,
                             BiConsumer<Integer, Integer> onExit) throws IOException {
        List<Worker> started = new ArrayList<>();
        Map<String, String> runContract = new LaunchEnvironment(options.masterAddr(), masterPort,
                new Topology(0, placement.worldSize(), 0, options.nprocPerNode(), options.nodeRank()), restart,
                options.runId()).toMap();
        try {
            for (int local = 0; local < options.nprocPerNode(); local++) {
                int rank = placement.globalRank(local);
                Topology topology = new Topology(rank, placement.worldSize(), local, options.nprocPerNode(),
                        options.nodeRank());
                LaunchEnvironment contract = new LaunchEnvironment(options.masterAddr(), masterPort, topology, restart,
                        options.runId());
                List<String> command = new ArrayList<>(ProcessTreeKiller.sessionWrapper());
                command.addAll(CoreBinding.prefix(options, local));
                command.addAll(program.command());
                ProcessBuilder pb = new ProcessBuilder(command);
                Map<String, String> env = pb.environment();
                env.putAll(extraEnv);
                env.putAll(contract.toMap());
                if (NO_INPUT.exists()) {
                    pb.redirectInput(NO_INPUT);
                }
                Writer log = openLog(options.logDir(), rank, restart);
                Process process;
                try {
                    process = pb.start();
                } catch (IOException e) {
                    closeQuietly(log);
                    throw new IOException("cannot start rank " + rank + " (" + program.description() + "): "
                            + e.getMessage(), e);
                }
                if (!ProcessTreeKiller.sessionWrapper().isEmpty()) {
                    guard.watch(process.pid());
                }
                OutputPump.LastLines last = new OutputPump.LastLines(LAST_LINES);
                OutputPump out = OutputPump.start(process.getInputStream(), rank, false, console, log, last);
                OutputPump err = OutputPump.start(process.getErrorStream(), rank, true, console, log, last);
                started.add(new Worker(rank, process, out, err, last, log));
                int localRank = local;
                process.onExit().thenAccept(p -> onExit.accept(localRank, p.exitValue()));
            }
        } catch (IOException | RuntimeException e) {
            new WorkerGroup(started, runContract, console).stop(Duration.ZERO, guard);
            throw e;
        }
        return new WorkerGroup(started, runContract, console);
    }

    private static Writer openLog(Path dir, int rank, int restart) throws IOException {
        if (dir == null) {
            return null;
        }
        Files.createDirectories(dir);
        Writer w = Files.newBufferedWriter(dir.resolve("rank-" + rank + ".log"), StandardCharsets.UTF_8,
                StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        w.write("=== cohort: rank " + rank + ", restart " + restart + " ===\n");
        w.flush();
        return w;
    }

    List<ProcessHandle> processes() {
        List<ProcessHandle> handles = new ArrayList<>();
        workers.forEach(w -> handles.add(w.process.toHandle()));
        return handles;
    }

    // Each worker leads its own process group when started through setsid.
    private List<Long> processGroups() {
        List<Long> groups = new ArrayList<>();
        if (!ProcessTreeKiller.sessionWrapper().isEmpty()) {
            workers.forEach(w -> groups.add(w.process.pid()));
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
