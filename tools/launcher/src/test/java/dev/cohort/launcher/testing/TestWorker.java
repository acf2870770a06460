package dev.cohort.launcher.testing;

import dev.cohort.api.Backends;
import dev.cohort.api.ProgressReporter;
import dev.cohort.runtime.SharedMemoryFiles;
import dev.cohort.runtime.auth.JobSecret;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * A worker for the launcher's tests. Every mode first records its pid as a file
 * {@code DIR/pid-RANK-RESTART-PID}, so that tests can signal it and check it is gone.
 *
 * <pre>
 * env DIR                       print "ENV k=v ..." (the launch contract, COHORT_*, threads; by name) and exit 0
 * fail-start DIR CODE           print "starting", exit CODE at once
 * fail-after DIR MILLIS CODE R  rank R exits CODE after MILLIS; the others sleep until stopped
 * fail-until DIR RESTART CODE R rank R exits CODE while COHORT_RESTART_COUNT &lt; RESTART; else like env
 * sleep DIR                     sleep until stopped
 * shm-leftover DIR              restart 0: rank 0 creates the shm file the engine would map for this
 *                               run, prints "CREATED path" and exits 7 (a crash before the others
 *                               attach); later restarts: rank 0 prints "LEFTOVER GONE" or "LEFTOVER
 *                               PRESENT" for the files of the earlier restarts; then like env
 * spam DIR LINES                print LINES long lines, each written in pieces, then exit 0
 * auto DIR                      print "AUTO backend (reason) on JDK n", auto's choice here; then like env
 * log DIR                       select backend auto (rank 0 logs the choice, INFO), log a WARNING with an
 *                               IllegalStateException("the cause"), print "LOGGED" and exit 0
 * progress DIR STEPS            every rank reports a task of STEPS steps (ProgressReporter.standard(),
 *                               one step per 2 ms), prints "RANK r DONE" and exits 0
 * join DIR                      select the backend the environment names and initialize it (joining its
 *                               group), print "JOINED backend" and exit 0
 * rendezvous DIR                rank 0 accepts every other rank on MASTER_PORT and prints "RENDEZVOUS n";
 *                               the others connect to MASTER_ADDR:MASTER_PORT; then like env
 * await DIR                     wait (up to 2 minutes) until the test creates DIR/go; then like env
 * </pre>
 */
public final class TestWorker {

    private TestWorker() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> env = System.getenv();
        int rank = Integer.parseInt(env.getOrDefault("RANK", "0"));
        String restart = env.getOrDefault("COHORT_RESTART_COUNT", "0");
        Path dir = Path.of(args[1]);
        Files.createDirectories(dir);
        Files.writeString(
                dir.resolve("pid-" + rank + "-" + restart + "-"
                        + ProcessHandle.current().pid()),
                "");
        switch (args[0]) {
            case "env" -> printEnv(env);
            case "fail-start" -> {
                System.out.println("starting");
                System.exit(Integer.parseInt(args[2]));
            }
            case "fail-after" -> {
                if (rank == Integer.parseInt(args[4])) {
                    System.out.println("working");
                    Thread.sleep(Long.parseLong(args[2]));
                    System.err.println("giving up with " + args[3]);
                    System.exit(Integer.parseInt(args[3]));
                }
                sleepForever();
            }
            case "fail-until" -> {
                if (rank == Integer.parseInt(args[4]) && Integer.parseInt(restart) < Integer.parseInt(args[2])) {
                    System.out.println("failing at restart " + restart);
                    System.exit(Integer.parseInt(args[3]));
                }
                printEnv(env);
            }
            case "sleep" -> sleepForever();
            case "shm-leftover" -> {
                shmLeftover(env, rank, Integer.parseInt(restart));
                printEnv(env);
            }
            case "spam" -> spam(rank, Integer.parseInt(args[2]));
            case "auto" -> {
                Backends.AutoChoice choice =
                        Backends.auto(env, Runtime.version().feature());
                System.out.println("AUTO " + choice.backend() + " (" + choice.reason() + ") on JDK "
                        + Runtime.version().feature());
                printEnv(env);
            }
            case "log" -> {
                Backends.select(Backends.AUTO);
                System.getLogger(TestWorker.class.getName())
                        .log(
                                System.Logger.Level.WARNING,
                                "a warning with its cause",
                                new IllegalStateException("the cause"));
                System.out.println("LOGGED");
            }
            case "progress" -> progress(rank, Integer.parseInt(args[2]));
            case "join" -> {
                try (var backend = Backends.select(null)) {
                    backend.initialize();
                    System.out.println("JOINED " + backend.name());
                }
            }
            case "rendezvous" -> {
                rendezvous(env, rank);
                printEnv(env);
            }
            case "await" -> {
                if (Processes.awaitFile(dir, "go"::equals, Duration.ofMinutes(2))
                        .isEmpty()) {
                    throw new IllegalStateException(dir.resolve("go") + " did not appear within 2 minutes");
                }
                printEnv(env);
            }
            default -> throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    /** The variables {@code env DIR} prints: the launch contract, Cohort's (but its secret) and the compute threads. */
    private static final Pattern SHOWN = Pattern.compile("MASTER_.*|.*RANK|.*WORLD_SIZE|COHORT_.*|.*_NUM_THREADS");

    private static void printEnv(Map<String, String> env) {
        StringBuilder sb = new StringBuilder("ENV");
        new TreeMap<>(env).forEach((name, value) -> {
            if (SHOWN.matcher(name).matches() && !name.equals(JobSecret.ENV)) {
                sb.append(' ').append(name).append('=').append(value);
            }
        });
        System.out.println(sb);
    }

    private static void spam(int rank, int lines) throws IOException {
        String body = "x".repeat(200);
        for (int i = 0; i < lines; i++) {
            // Unbuffered pieces, so a line reaches the pipe in several writes.
            System.out.write(("BEGIN " + rank + " " + i + " ").getBytes());
            System.out.flush();
            System.out.write(body.getBytes());
            System.out.flush();
            System.out.write(" END\n".getBytes());
            System.out.flush();
        }
    }

    private static void progress(int rank, int steps) throws InterruptedException {
        try (ProgressReporter progress = ProgressReporter.standard()) {
            progress.start("task of rank " + rank, steps, "steps");
            for (int i = 1; i <= steps; i++) {
                Thread.sleep(2);
                int step = i;
                progress.update(i, () -> "at step " + step);
            }
        }
        System.out.println("RANK " + rank + " DONE");
    }

    private static void rendezvous(Map<String, String> env, int rank) throws Exception {
        int port = Integer.parseInt(env.get("MASTER_PORT"));
        int world = Integer.parseInt(env.get("WORLD_SIZE"));
        if (rank == 0) {
            try (java.net.ServerSocket server = new java.net.ServerSocket(port)) {
                server.setSoTimeout(30_000);
                for (int i = 1; i < world; i++) {
                    server.accept().close();
                }
            }
            System.out.println("RENDEZVOUS " + (world - 1));
            return;
        }
        long deadline = System.currentTimeMillis() + 30_000;
        while (true) {
            try (java.net.Socket s = new java.net.Socket()) {
                s.connect(new java.net.InetSocketAddress(env.get("MASTER_ADDR"), port), 2000);
                System.out.println("CONNECTED");
                return;
            } catch (IOException e) {
                if (System.currentTimeMillis() > deadline) {
                    throw e;
                }
                Thread.sleep(100);
            }
        }
    }

    private static void shmLeftover(Map<String, String> env, int rank, int restart) throws IOException {
        if (rank != 0) {
            if (restart == 0) {
                sleepForeverUnchecked();
            }
            return;
        }
        if (restart == 0) {
            Path file = Files.createFile(SharedMemoryFiles.path(env));
            System.out.println("CREATED " + file);
            System.out.flush();
            System.exit(7);
        }
        for (int earlier = 0; earlier < restart; earlier++) {
            Map<String, String> then = new HashMap<>(env);
            then.put("COHORT_RESTART_COUNT", Integer.toString(earlier));
            Path file = SharedMemoryFiles.path(then);
            System.out.println(Files.exists(file) ? "LEFTOVER PRESENT " + file : "LEFTOVER GONE " + file);
        }
    }

    private static void sleepForeverUnchecked() {
        try {
            sleepForever();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void sleepForever() throws InterruptedException {
        while (true) {
            Thread.sleep(60_000);
        }
    }
}
