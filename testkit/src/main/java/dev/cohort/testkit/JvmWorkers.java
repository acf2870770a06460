package dev.cohort.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;

/**
 * Test support: starts one JVM per rank running a main class on this JVM's class path, each with
 * its own environment and output file, and waits for all of them within a deadline (killing every
 * one that is still running when it passes, or when another rank failed).
 */
public final class JvmWorkers {

    /** One finished (or killed) worker. */
    public record Result(int rank, int exitCode, boolean killed, String output) {}

    private JvmWorkers() {}

    /** Every port {@link #freePort()} handed out in this JVM: it never hands one out twice. */
    private static final Set<Integer> HANDED_OUT = ConcurrentHashMap.newKeySet();

    /**
     * A TCP port that was free a moment ago and that no earlier call in this JVM returned, below
     * Linux's ephemeral range (32768 and up): a client that connects to an ephemeral port before
     * its server listens can be given that very port and connect to itself, taking the port from
     * the server (the reason torchrun's default is 29500). Tests that pick several ports before
     * starting anything (one per run, say) would otherwise now and then get the same one twice,
     * and a second run's ranks would reach the first run's store.
     */
    public static int freePort() {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        for (int attempt = 0; attempt < 200; attempt++) {
            int port = 20_000 + random.nextInt(12_000);
            if (HANDED_OUT.contains(port)) {
                continue;
            }
            try (ServerSocket s = new ServerSocket(port)) {
                if (HANDED_OUT.add(port)) {
                    return port;
                }
            } catch (IOException e) {
                // taken: try another
            }
        }
        throw new IllegalStateException("no free TCP port found in 20000-31999");
    }

    /**
     * The launch environment a plain launcher gives rank {@code rank} of {@code world}: rank 0's
     * store at {@code masterAddr}:{@code port}, RANK and WORLD_SIZE, no host layout. Modifiable, for
     * a test to add to.
     */
    public static Map<String, String> launchEnv(String masterAddr, int port, int rank, int world) {
        Map<String, String> env = new HashMap<>();
        env.put("MASTER_ADDR", masterAddr);
        env.put("MASTER_PORT", Integer.toString(port));
        env.put("RANK", Integer.toString(rank));
        env.put("WORLD_SIZE", Integer.toString(world));
        return env;
    }

    /**
     * {@link #launchEnv} with LOCAL_RANK, LOCAL_WORLD_SIZE and GROUP_RANK too, as torchrun gives
     * them: {@code localWorld} consecutive ranks on each host.
     */
    public static Map<String, String> launchEnv(String masterAddr, int port, int rank, int world, int localWorld) {
        Map<String, String> env = launchEnv(masterAddr, port, rank, world);
        env.put("LOCAL_RANK", Integer.toString(rank % localWorld));
        env.put("LOCAL_WORLD_SIZE", Integer.toString(localWorld));
        env.put("GROUP_RANK", Integer.toString(rank / localWorld));
        return env;
    }

    /** The command that runs {@code mainClass} in a JVM like this one. */
    public static List<String> javaCommand(Class<?> mainClass, List<String> jvmArgs, List<String> args) {
        List<String> cmd = new ArrayList<>();
        cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("-Xmx1g");
        cmd.addAll(jvmArgs);
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(mainClass.getName());
        cmd.addAll(args);
        return cmd;
    }

    /**
     * Runs {@code n} workers; rank r runs {@code command.apply(r)} with {@code env.apply(r)} added to
     * this process's environment. Returns when all exited, or kills the rest once one fails (after a
     * grace period for the others to report their own errors) or the deadline passes.
     */
    public static List<Result> run(
            int n,
            IntFunction<List<String>> command,
            IntFunction<Map<String, String>> env,
            Path logDir,
            Duration deadline) {
        try {
            Files.createDirectories(logDir);
            List<Process> processes = new ArrayList<>();
            List<Path> logs = new ArrayList<>();
            for (int r = 0; r < n; r++) {
                Path log = logDir.resolve("rank-" + r + ".log");
                ProcessBuilder pb = new ProcessBuilder(command.apply(r))
                        .redirectErrorStream(true)
                        .redirectOutput(log.toFile());
                pb.environment().putAll(env.apply(r));
                processes.add(pb.start());
                logs.add(log);
            }
            long end = System.nanoTime() + deadline.toNanos();
            long failedAt = Long.MAX_VALUE;
            boolean[] killed = new boolean[n];
            while (processes.stream().anyMatch(Process::isAlive)) {
                long now = System.nanoTime();
                for (int r = 0; r < n; r++) {
                    Process p = processes.get(r);
                    if (!p.isAlive() && p.exitValue() != 0 && failedAt == Long.MAX_VALUE) {
                        failedAt = now;
                    }
                }
                // After a failure the others get 20 s to report theirs; one still stopped (SIGSTOP) 3 s
                // after it cannot (a test that continues a stopped worker does so at once).
                boolean giveUp = now > end || now - failedAt > TimeUnit.SECONDS.toNanos(20);
                boolean stoppedAfterFailure = now - failedAt > TimeUnit.SECONDS.toNanos(3);
                if (giveUp || stoppedAfterFailure) {
                    for (int r = 0; r < n; r++) {
                        if (processes.get(r).isAlive()
                                && (giveUp || stopped(processes.get(r).pid()))) {
                            killed[r] = true;
                            processes.get(r).toHandle().descendants().forEach(ProcessHandle::destroyForcibly);
                            processes.get(r).destroyForcibly();
                        }
                    }
                }
                processes.get(0).waitFor(50, TimeUnit.MILLISECONDS);
            }
            List<Result> results = new ArrayList<>();
            for (int r = 0; r < n; r++) {
                Process p = processes.get(r);
                p.waitFor(10, TimeUnit.SECONDS);
                results.add(new Result(r, p.exitValue(), killed[r], Files.readString(logs.get(r))));
            }
            return results;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** Whether process {@code pid} is stopped by a signal (state T in /proc), so it reports nothing until continued. */
    private static boolean stopped(long pid) {
        try {
            String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
            int end = stat.lastIndexOf(')');
            return end > 0 && end + 2 < stat.length() && stat.charAt(end + 2) == 'T';
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * The seconds a failure took, from a worker's {@code FAILED after <s> s} line (the failure
     * tests' workers print it).
     *
     * @throws AssertionError when there is no such line
     */
    public static double failedAfter(String output) {
        java.util.regex.Matcher m =
                java.util.regex.Pattern.compile("FAILED after ([0-9.]+) s").matcher(output);
        if (!m.find()) {
            throw new AssertionError("no 'FAILED after <s> s' line in:\n" + output);
        }
        return Double.parseDouble(m.group(1));
    }

    /**
     * Rank {@code rank}'s output, once it is checked that the rank exited with
     * {@link WorkerProcess#FAILED_AS_EXPECTED}: the collective its fault worker expected to fail did.
     */
    public static String failedAsExpected(List<Result> results, int rank) {
        org.assertj.core.api.Assertions.assertThat(results.get(rank).exitCode())
                .as(describe(results))
                .isEqualTo(WorkerProcess.FAILED_AS_EXPECTED);
        return results.get(rank).output();
    }

    /**
     * Starts a thread that watches {@code log} for a line {@code "<marker> pid <P>"} (a worker
     * announcing it is ready to die) and, {@code delay} after it appears, SIGKILLs process P; it
     * gives up after {@code within}. Join it after the workers ended.
     */
    public static Thread killWhenLogged(Path log, String marker, Duration delay, Duration within) {
        java.util.regex.Pattern line =
                java.util.regex.Pattern.compile(java.util.regex.Pattern.quote(marker) + " pid (\\d+)");
        Thread killer = new Thread(
                () -> {
                    long until = System.nanoTime() + within.toNanos();
                    try {
                        while (System.nanoTime() < until) {
                            Thread.sleep(50);
                            java.util.regex.Matcher m = line.matcher(Files.exists(log) ? Files.readString(log) : "");
                            if (m.find()) {
                                Thread.sleep(delay.toMillis());
                                ProcessHandle.of(Long.parseLong(m.group(1))).ifPresent(ProcessHandle::destroyForcibly);
                                return;
                            }
                        }
                    } catch (InterruptedException | IOException e) {
                        throw new IllegalStateException(e);
                    }
                },
                "kill-when-logged");
        killer.setDaemon(true);
        killer.start();
        return killer;
    }

    /** Asserts that every worker exited 0 and printed {@code OK rank R} and each of {@code also}. */
    public static void assertAllOk(List<Result> results, String... also) {
        for (Result r : results) {
            org.assertj.core.api.Assertions.assertThat(r.exitCode())
                    .as(describe(results))
                    .isZero();
            org.assertj.core.api.Assertions.assertThat(r.output())
                    .as(describe(results))
                    .contains("OK rank " + r.rank());
            for (String text : also) {
                org.assertj.core.api.Assertions.assertThat(r.output())
                        .as(describe(results))
                        .contains(text);
            }
        }
    }

    /** Every worker's output, for assertion messages. */
    public static String describe(List<Result> results) {
        StringBuilder s = new StringBuilder();
        for (Result r : results) {
            s.append("---- rank ")
                    .append(r.rank())
                    .append(" exit ")
                    .append(r.exitCode())
                    .append(r.killed() ? " (killed)" : "")
                    .append('\n')
                    .append(tail(r.output(), 4000));
        }
        return s.toString();
    }

    private static String tail(String s, int max) {
        return s.length() <= max ? s : "..." + s.substring(s.length() - max);
    }
}
