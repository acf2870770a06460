package dev.cohort.launcher.testing;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.launcher.Console;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardWatchEventKinds;
import java.nio.file.WatchKey;
import java.nio.file.WatchService;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/** Helpers for tests that start real worker processes. */
public final class Processes {

    private Processes() {}

    /** A console that keeps everything, stdout and stderr apart. */
    public static final class Captured {
        private final ByteArrayOutputStream out = new ByteArrayOutputStream();
        private final ByteArrayOutputStream err = new ByteArrayOutputStream();
        public final Console console = new Console(
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));

        public String out() {
            synchronized (out) {
                return out.toString(StandardCharsets.UTF_8);
            }
        }

        public String err() {
            synchronized (err) {
                return err.toString(StandardCharsets.UTF_8);
            }
        }
    }

    /** The pids the workers recorded in {@code dir} (files pid-RANK-RESTART-PID). */
    public static List<Long> pids(Path dir) {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> files = Files.list(dir)) {
            return files.map(p -> p.getFileName().toString())
                    .filter(n -> n.startsWith("pid-"))
                    .map(n -> Long.parseLong(n.substring(n.lastIndexOf('-') + 1)))
                    .collect(Collectors.toList());
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The pid of rank {@code rank} in restart {@code restart}, waiting for it to be recorded. */
    public static long awaitPid(Path dir, int rank, int restart, long timeoutMillis) throws InterruptedException {
        String prefix = "pid-" + rank + "-" + restart + "-";
        String name = awaitFile(dir, n -> n.startsWith(prefix), Duration.ofMillis(timeoutMillis))
                .orElseThrow(() -> new AssertionError(
                        "rank " + rank + " (restart " + restart + ") did not start within " + timeoutMillis + " ms"));
        return Long.parseLong(name.substring(prefix.length()));
    }

    /**
     * The name of a file in {@code dir} (created if missing) that {@code matches}, waiting up to
     * {@code timeout} for another process to create or write one: woken by the file system's events.
     */
    public static Optional<String> awaitFile(Path dir, Predicate<String> matches, Duration timeout)
            throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        try {
            Files.createDirectories(dir);
            try (WatchService watch = dir.getFileSystem().newWatchService()) {
                dir.register(watch, StandardWatchEventKinds.ENTRY_CREATE, StandardWatchEventKinds.ENTRY_MODIFY);
                while (true) {
                    try (Stream<Path> files = Files.list(dir)) {
                        Optional<String> found = files.map(p -> p.getFileName().toString())
                                .filter(matches)
                                .findFirst();
                        long left = deadline - System.nanoTime();
                        if (found.isPresent() || left <= 0) {
                            return found;
                        }
                        WatchKey key = watch.poll(left, TimeUnit.NANOSECONDS);
                        if (key != null) {
                            key.pollEvents();
                            key.reset();
                        }
                    }
                }
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot watch " + dir + ": " + e.getMessage(), e);
        }
    }

    /**
     * Whether {@code file}, written by another process, comes to contain {@code text} within
     * {@code timeout}: woken by the file system's events.
     */
    public static boolean awaitText(Path file, String text, Duration timeout) throws InterruptedException {
        return awaitFile(
                        file.getParent(), n -> n.equals(file.getFileName().toString()) && contains(file, text), timeout)
                .isPresent();
    }

    private static boolean contains(Path file, String text) {
        try {
            return Files.readString(file).contains(text);
        } catch (IOException e) {
            return false;
        }
    }

    /** Alive and not a zombie (a container's pid 1 may never reap re-parented orphans). */
    public static boolean alive(long pid) {
        try {
            String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
            char state = stat.charAt(stat.lastIndexOf(')') + 2);
            return state != 'Z' && state != 'X';
        } catch (IOException e) {
            return ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)
                    && !Files.isDirectory(Path.of("/proc"));
        }
    }

    public static void assertNoneAlive(List<Long> pids) {
        List<Long> alive = new ArrayList<>();
        pids.forEach(p -> {
            if (alive(p)) {
                alive.add(p);
            }
        });
        assertThat(alive)
                .as("worker processes still alive after the launcher returned")
                .isEmpty();
    }

    /**
     * Waits up to {@code timeout} for every process of {@code pids} to die, then asserts none is
     * alive. Polls /proc: nothing tells a process that another, not its child, died (or became a
     * zombie that nobody reaps).
     */
    public static void awaitNoneAlive(List<Long> pids, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline && pids.stream().anyMatch(Processes::alive)) {
            Thread.sleep(20);
        }
        assertNoneAlive(pids);
    }

    /** Sends {@code signal} (e.g. "STOP", "KILL") with kill(1). */
    public static void signal(long pid, String signal) throws IOException, InterruptedException {
        int rc = new ProcessBuilder("kill", "-" + signal, Long.toString(pid))
                .inheritIO()
                .start()
                .waitFor();
        assertThat(rc).as("kill -" + signal + " " + pid).isZero();
    }
}
