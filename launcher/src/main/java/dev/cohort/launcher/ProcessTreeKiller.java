package dev.cohort.launcher;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * Stops process trees: SIGTERM to every process of each tree (root and {@code descendants()}),
 * SIGCONT so that a stopped process can act on the SIGTERM, then SIGKILL to whatever is still
 * alive after the grace period. SIGKILL also ends stopped processes.
 *
 * <p>The trees are captured before the first signal: once a root dies its children are
 * re-parented and no longer show up as its descendants.
 */
public final class ProcessTreeKiller {

    /** The grace period between SIGTERM and SIGKILL when none is given. */
    public static final Duration DEFAULT_GRACE = Duration.ofSeconds(5);

    private ProcessTreeKiller() {
    }

    /** Stops every tree rooted at {@code roots}; returns when all are dead or after grace + 2 s. */
    public static void stop(Collection<ProcessHandle> roots, Duration grace) {
        List<ProcessHandle> all = new ArrayList<>();
        for (ProcessHandle root : roots) {
            all.add(root);
            all.addAll(root.descendants().collect(Collectors.toList()));
        }
        List<ProcessHandle> alive = all.stream().filter(ProcessHandle::isAlive).collect(Collectors.toList());
        if (alive.isEmpty()) {
            return;
        }
        alive.forEach(ProcessHandle::destroy);
        sendCont(alive);
        long deadline = System.nanoTime() + grace.toNanos();
        for (ProcessHandle p : alive) {
            awaitDeath(p, deadline);
        }
        alive.stream().filter(ProcessHandle::isAlive).forEach(ProcessHandle::destroyForcibly);
        long killDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
        for (ProcessHandle p : alive) {
            awaitDeath(p, killDeadline);
        }
    }

    /** SIGKILL, at once, to every tree rooted at {@code roots}. */
    public static void kill(Collection<ProcessHandle> roots) {
        stop(roots, Duration.ZERO);
    }

    private static void awaitDeath(ProcessHandle p, long deadlineNanos) {
        long left = deadlineNanos - System.nanoTime();
        if (left <= 0 || !p.isAlive()) {
            return;
        }
        try {
            p.onExit().get(left, TimeUnit.NANOSECONDS);
        } catch (Exception e) {
            // Timed out or interrupted: the caller escalates or gives up.
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
        }
    }

    // Java 17 has no API for SIGCONT; kill(1) is in procps/util-linux and the shell's builtin.
    private static void sendCont(List<ProcessHandle> processes) {
        List<String> cmd = new ArrayList<>(List.of("sh", "-c", "kill -CONT \"$@\" 2>/dev/null; exit 0", "sh"));
        processes.forEach(p -> cmd.add(Long.toString(p.pid())));
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            if (!p.waitFor(2, TimeUnit.SECONDS)) {
                p.destroyForcibly();
            }
        } catch (IOException e) {
            // No shell: stopped processes then die by SIGKILL after the grace period instead.
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
