package dev.cohort.launcher.testing;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.launcher.Console;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
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
        long deadline = System.currentTimeMillis() + timeoutMillis;
        String prefix = "pid-" + rank + "-" + restart + "-";
        while (System.currentTimeMillis() < deadline) {
            try (Stream<Path> files = Files.isDirectory(dir) ? Files.list(dir) : Stream.empty()) {
                List<String> names = files.map(p -> p.getFileName().toString())
                        .filter(n -> n.startsWith(prefix))
                        .collect(Collectors.toList());
                if (!names.isEmpty()) {
                    return Long.parseLong(names.get(0).substring(prefix.length()));
                }
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
            Thread.sleep(50);
        }
        throw new AssertionError(
                "rank " + rank + " (restart " + restart + ") did not start within " + timeoutMillis + " ms");
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

    /** Sends {@code signal} (e.g. "STOP", "KILL") with kill(1). */
    public static void signal(long pid, String signal) throws IOException, InterruptedException {
        int rc = new ProcessBuilder("kill", "-" + signal, Long.toString(pid))
                .inheritIO()
                .start()
                .waitFor();
        assertThat(rc).as("kill -" + signal + " " + pid).isZero();
    }
}
