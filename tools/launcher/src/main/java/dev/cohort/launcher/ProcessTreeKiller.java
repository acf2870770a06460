package dev.cohort.launcher;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * Stops workers and everything they started. Each worker runs as the leader of its own process
 * group (see {@link #sessionWrapper()}), so its group reaches even children whose parent has
 * already exited and that are no longer anyone's {@code descendants()}.
 *
 * <p>Stopping: SIGTERM to every group and to every process of each tree (root and
 * {@code descendants()}, captured before the first signal), SIGCONT so that a stopped process can
 * act on the SIGTERM, then SIGKILL to the groups and to whatever is still alive once the grace
 * period is over or every captured process is dead. SIGKILL also ends stopped processes.
 */
public final class ProcessTreeKiller {

    /** The grace period between SIGTERM and SIGKILL when none is given. */
    public static final Duration DEFAULT_GRACE = Duration.ofSeconds(5);

    private static final List<String> SETSID = findSetsid();

    private ProcessTreeKiller() {}

    /**
     * The command prefix that makes a worker the leader of a new session and process group
     * ({@code setsid}, which execs in place when the caller is no group leader, so the worker
     * keeps its pid), or an empty list where {@code setsid} is missing.
     */
    static List<String> sessionWrapper() {
        return SETSID;
    }

    /**
     * {@link #sessionWrapper()}, then a shell that waits for one line on its input before it
     * execs the worker in place (the pid, so the group, stays): the launcher sends the line once
     * its {@link OrphanGuard} watches the group, so a launcher killed in between leaves no worker
     * running (without the line, at end of input, the shell exits). Empty where setsid is missing.
     */
    static List<String> heldSession() {
        if (SETSID.isEmpty()) {
            return SETSID;
        }
        List<String> held = new ArrayList<>(SETSID);
        held.addAll(List.of("/bin/sh", "-c", "IFS= read -r _ || exit 0; exec \"$@\"", "cohort-worker"));
        return held;
    }

    /**
     * Stops every tree rooted at {@code roots} and every process group in {@code groups}; returns
     * when all captured processes are dead, or after grace + 2 s.
     */
    public static void stop(Collection<ProcessHandle> roots, Collection<Long> groups, Duration grace) {
        List<ProcessHandle> all = new ArrayList<>();
        for (ProcessHandle root : roots) {
            all.add(root);
            all.addAll(root.descendants().collect(Collectors.toList()));
        }
        List<ProcessHandle> alive = all.stream().filter(ProcessHandle::isAlive).collect(Collectors.toList());
        signalGroups("TERM", groups);
        alive.forEach(ProcessHandle::destroy);
        signalGroups("CONT", groups);
        signalProcesses("CONT", alive);
        long deadline = System.nanoTime() + grace.toNanos();
        for (ProcessHandle p : alive) {
            awaitDeath(p, deadline);
        }
        signalGroups("KILL", groups);
        alive.stream().filter(ProcessHandle::isAlive).forEach(ProcessHandle::destroyForcibly);
        long killDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
        for (ProcessHandle p : alive) {
            awaitDeath(p, killDeadline);
        }
    }

    private static void awaitDeath(ProcessHandle p, long deadlineNanos) {
        long left = deadlineNanos - System.nanoTime();
        if (left <= 0 || !p.isAlive()) {
            return;
        }
        try {
            p.onExit().get(left, TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            // Timed out: the caller escalates or gives up.
        }
    }

    private static void signalGroups(String signal, Collection<Long> groups) {
        if (!groups.isEmpty()) {
            kill(signal, groups.stream().map(g -> "-" + g).collect(Collectors.toList()));
        }
    }

    private static void signalProcesses(String signal, Collection<ProcessHandle> processes) {
        if (!processes.isEmpty()) {
            kill(signal, processes.stream().map(p -> Long.toString(p.pid())).collect(Collectors.toList()));
        }
    }

    // Java 17 signals only with SIGTERM/SIGKILL, and never a group: the shell's kill builtin does
    // the rest. Errors (a group already empty) are ignored.
    private static void kill(String signal, List<String> targets) {
        List<String> cmd = new ArrayList<>(
                List.of("sh", "-c", "for t; do kill -s " + signal + " -- \"$t\"; done " + "2>/dev/null; exit 0", "sh"));
        cmd.addAll(targets);
        try {
            Process p = new ProcessBuilder(cmd)
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .start();
            if (!p.waitFor(2, TimeUnit.SECONDS)) {
                p.destroyForcibly();
            }
        } catch (IOException e) {
            // No shell: stopped processes die by SIGKILL after the grace period instead.
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static List<String> findSetsid() {
        for (String dir : List.of("/usr/bin", "/bin", "/usr/sbin", "/sbin")) {
            Path p = Path.of(dir, "setsid");
            if (Files.isExecutable(p)) {
                return List.of(p.toString());
            }
        }
        return List.of();
    }
}
