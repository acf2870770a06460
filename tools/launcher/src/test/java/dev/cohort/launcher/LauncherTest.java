package dev.cohort.launcher;

import static dev.cohort.launcher.testing.Processes.assertNoneAlive;
import static dev.cohort.launcher.testing.Processes.awaitPid;
import static dev.cohort.launcher.testing.Processes.pids;
import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.launcher.testing.Processes;
import dev.cohort.launcher.testing.TestWorker;
import dev.cohort.runtime.SharedMemoryFiles;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The Java API with real worker processes: Java main classes and shell commands. */
class LauncherTest {

    @TempDir
    Path dir;

    private final Processes.Captured console = new Processes.Captured();

    private static LaunchOptions.Builder options(int workers) {
        return LaunchOptions.builder().nprocPerNode(workers).masterPort(0).grace(Duration.ofSeconds(2));
    }

    private Launcher javaWorkers(LaunchOptions options, String... args) {
        return new Launcher(options, WorkerProgram.mainClass(TestWorker.class.getName(), List.of(args)))
                .console(console.console)
                .cores(4);
    }

    /** Runs {@code workers} TestWorkers in {@code mode} (their folder: this test's); they all exit 0. */
    private void runToTheEnd(int workers, String mode) throws IOException {
        assertThat(javaWorkers(options(workers).build(), mode, dir.toString())
                        .run()
                        .exitCode())
                .isZero();
    }

    private Launcher shellWorkers(LaunchOptions options, String script) {
        return new Launcher(options, WorkerProgram.command(List.of("sh", "-c", script)))
                .console(console.console)
                .cores(4);
    }

    /** Two workers that sleep until they are stopped. */
    private Launcher sleepingWorkers() {
        return javaWorkers(options(2).build(), "sleep", dir.toString());
    }

    private List<String> envLines() {
        return console.out().lines().filter(l -> l.contains("ENV ")).collect(Collectors.toList());
    }

    /** DJL's PyTorch engine loads its own libtorch: gloo, which loads JavaCPP's, is no advice for such a program. */
    @Test
    @Timeout(60)
    void aProgramThatUsesDjlIsToldToUseTcpNotGloo() throws Exception {
        Path src = Files.createDirectories(dir.resolve("src/ai/djl/engine"));
        Files.writeString(src.resolve("Engine.java"), "package ai.djl.engine; public class Engine { }");
        assertThat(javax.tools.ToolProvider.getSystemJavaCompiler()
                        .run(
                                null,
                                null,
                                null,
                                "-d",
                                dir.resolve("djl").toString(),
                                src.resolve("Engine.java").toString()))
                .isZero();
        String cp = System.getProperty("java.class.path");
        WorkerProgram plain =
                WorkerProgram.mainClass(TestWorker.class.getName(), List.of("env", dir.toString()), cp, List.of());
        WorkerProgram djl = WorkerProgram.mainClass(
                TestWorker.class.getName(),
                List.of("env", dir.toString()),
                dir.resolve("djl") + java.io.File.pathSeparator + cp,
                List.of());
        assertThat(plain.usesDjl()).isFalse();
        assertThat(djl.usesDjl()).isTrue();
        assertThat(WorkerProgram.command(List.of("sh")).usesDjl()).isFalse();

        LaunchResult result = new Launcher(
                        options(1).addEnvironment("COHORT_BACKEND", "gloo").build(), djl)
                .console(console.console)
                .cores(4)
                .run();

        assertThat(result.exitCode()).isZero();
        assertThat(console.err())
                .contains("use COHORT_BACKEND=gloo (--backend); but this program uses DJL "
                        + "(ai.djl.engine.Engine is on its class path), whose libtorch cannot share a process with the one gloo "
                        + "loads (JavaCPP's): run it with --backend tcp");
        assertThat(Launcher.djlAdvice("gloo", 17)).contains("--backend tcp").doesNotContain("shm");
        assertThat(Launcher.djlAdvice("gloo", 25)).contains("--backend tcp (or shm, on one host)");
    }

    @Test
    @Timeout(60)
    void aProgramWithoutDjlGetsNoDjlAdvice() throws Exception {
        LaunchResult result = javaWorkers(
                        options(1).addEnvironment("COHORT_BACKEND", "gloo").build(), "env", dir.toString())
                .run();

        assertThat(result.exitCode()).isZero();
        assertThat(console.err())
                .contains("use COHORT_BACKEND=gloo (--backend)")
                .doesNotContain("DJL");
    }

    /** A program whose own argument parser exited 0 (say, rejecting --distributed-backend) trained nothing together. */
    @Test
    @Timeout(60)
    void aRunWhoseWorkersNeverJoinedAGroupEndsWithAWarning() throws Exception {
        runToTheEnd(2, "env");
        List<String> lines = console.err().lines().toList();
        assertThat(lines.get(lines.size() - 1))
                .startsWith(
                        "cohort: WARNING: every worker exited 0, but no worker joined "
                                + "a process group, so nothing was trained together: the program never called its backend's initialize()")
                .contains("its own argument parser rejected an argument");
        assertThat(console.err()).doesNotContain("all workers finished");
    }

    @Test
    void theIncubatorNoticeIsDroppedAfterTheJvmsOtherNotices() throws Exception {
        LaunchOptions options =
                options(2).addEnvironment("JAVA_TOOL_OPTIONS", "-Xss2m").build();
        WorkerProgram program = WorkerProgram.mainClass(
                TestWorker.class.getName(),
                List.of("env", dir.toString()),
                System.getProperty("java.class.path"),
                List.of("--add-modules", "jdk.incubator.vector"));
        LaunchResult result =
                new Launcher(options, program).console(console.console).cores(4).run();

        assertThat(result.exitCode()).isZero();
        assertThat(console.err()).contains("Picked up JAVA_TOOL_OPTIONS").doesNotContain("Using incubator modules");
    }

    @Test
    void oneWorkerThatJoinsNoGroupTrainsAloneWithoutAWarning() throws Exception {
        runToTheEnd(1, "env");
        assertThat(console.err()).doesNotContain("no worker joined");
    }

    @Test
    @Timeout(60)
    void aRunWhoseWorkersJoinedFinishesPlainly() throws Exception {
        runToTheEnd(1, "join");
        assertThat(console.out()).contains("[rank 0] JOINED none");
        assertThat(console.err())
                .contains("cohort: run finished: all workers finished")
                .doesNotContain("WARNING");
    }

    @Test
    @Timeout(60)
    void cleanRunGivesEachWorkerTheContractAndItsShareOfTheCores() throws Exception {
        LaunchResult result = javaWorkers(
                        options(2)
                                .runId("clean-run")
                                .addEnvironment("MKL_NUM_THREADS", "7")
                                .build(),
                        "env",
                        dir.toString())
                .run();

        assertThat(result.exitCode()).isZero();
        assertThat(result.restarts()).isZero();
        List<String> env = envLines();
        assertThat(env).hasSize(2);
        for (int rank = 0; rank < 2; rank++) {
            String line = env.stream()
                    .filter(l -> l.startsWith("[rank "))
                    .filter(l -> l.contains(" RANK="))
                    .filter(l -> l.contains(" RANK=" + l.charAt(6) + " "))
                    .findFirst()
                    .orElseThrow();
            assertThat(line)
                    .contains(
                            "WORLD_SIZE=2",
                            "LOCAL_WORLD_SIZE=2",
                            "GROUP_RANK=0",
                            "COHORT_RESTART_COUNT=0",
                            "COHORT_RUN_ID=clean-run",
                            "MASTER_ADDR=127.0.0.1",
                            "OMP_NUM_THREADS=1",
                            "OPENBLAS_NUM_THREADS=1",
                            "COHORT_COMPUTE_THREADS=1",
                            "MKL_NUM_THREADS=7",
                            "COHORT_BACKEND=auto");
        }
        assertThat(env)
                .anyMatch(l -> l.startsWith("[rank 0] ENV") && l.contains(" RANK=0 ") && l.contains("LOCAL_RANK=0"));
        assertThat(env)
                .anyMatch(l -> l.startsWith("[rank 1] ENV") && l.contains(" RANK=1 ") && l.contains("LOCAL_RANK=1"));
        assertThat(env.stream()
                        .map(l -> l.replaceAll(".*MASTER_PORT=(\\d+).*", "$1"))
                        .distinct())
                .hasSize(1)
                .allMatch(p -> Integer.parseInt(p) > 0);
        assertThat(console.err().lines().filter(l -> l.startsWith("cohort: compute threads")))
                .hasSize(1);
        assertThat(console.err())
                .contains("cohort: workers that choose no --distributed-backend, or auto, use "
                        + (Runtime.version().feature() >= 22 ? "shm (all 2 workers on one host" : "gloo ("));
        assertNoneAlive(pids(dir));
    }

    @Test
    @Timeout(60)
    void workerFailingAtStartupEndsTheRunWithItsExitCodeAndLastLines() throws Exception {
        LaunchResult result = javaWorkers(options(2).build(), "fail-start", dir.toString(), "3")
                .run();

        assertThat(result.exitCode()).isEqualTo(3);
        assertThat(result.failures()).hasSize(1);
        assertThat(result.failures().get(0).status().describe()).isEqualTo("exited with code 3");
        assertThat(result.failures().get(0).lastLines()).contains("starting");
        assertThat(console.err())
                .containsPattern("cohort: rank [01] exited with code 3; stopping the other workers")
                .contains("  | starting");
        assertNoneAlive(pids(dir));
    }

    @Test
    @Timeout(60)
    void workerFailingAfterAWhileStopsTheOthersWithinSeconds() throws Exception {
        long start = System.nanoTime();
        LaunchResult result = javaWorkers(options(3).build(), "fail-after", dir.toString(), "1500", "5", "1")
                .run();
        long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start);

        assertThat(result.exitCode()).isEqualTo(5);
        assertThat(result.failures()).singleElement().satisfies(f -> {
            assertThat(f.rank()).isEqualTo(1);
            assertThat(f.lastLines()).contains("working", "giving up with 5");
        });
        assertThat(result.message()).contains("rank 1 exited with code 5", "--max-restarts 0");
        assertThat(seconds).as("run time, s").isLessThan(20);
        assertNoneAlive(pids(dir));
    }

    @Test
    @Timeout(90)
    void restartsAreCountedAndVisibleToTheWorkers() throws Exception {
        LaunchResult result = javaWorkers(
                        options(2).maxRestarts(3).build(), "fail-until", dir.toString(), "2", "4", "1")
                .run();

        assertThat(result.exitCode()).isZero();
        assertThat(result.restarts()).isEqualTo(2);
        assertThat(result.failures()).extracting(WorkerFailure::restart).containsExactly(0, 1);
        assertThat(console.out()).contains("[rank 1] failing at restart 0", "[rank 1] failing at restart 1");
        // Rank 0 finishes each round cleanly; in the last round both ranks do.
        assertThat(envLines())
                .filteredOn(l -> l.contains("COHORT_RESTART_COUNT=2"))
                .hasSize(2);
        assertThat(envLines()).noneMatch(l -> l.startsWith("[rank 1]") && !l.contains("COHORT_RESTART_COUNT=2"));
        assertThat(console.err()).contains("restarting the group: restart 1 of 3", "restart 2 of 3");
        assertNoneAlive(pids(dir));
    }

    @Test
    @Timeout(60)
    void sharedMemoryFilesACrashedGroupLeftAreRemovedBeforeTheRestartAndOthersKept() throws Exception {
        String runId = "leftover-" + ProcessHandle.current().pid() + "-" + System.nanoTime() % 100_000;
        int port = Ports.pickFree();
        // Files that are not this run's: another run whose id extends this one, and another job with
        // the same run id (another master port).
        List<Path> others = List.of(shmFile(runId + "-1", 0, port), shmFile(runId, 0, Ports.pickFree()));
        try {
            LaunchResult result = javaWorkers(
                            options(2)
                                    .masterPort(port)
                                    .runId(runId)
                                    .maxRestarts(1)
                                    .build(),
                            "shm-leftover",
                            dir.toString())
                    .run();

            assertThat(result.exitCode()).as(console.err()).isZero();
            assertThat(result.failures())
                    .singleElement()
                    .satisfies(f -> assertThat(f.status().code()).isEqualTo(7));
            String created = console.out()
                    .lines()
                    .filter(l -> l.startsWith("[rank 0] CREATED "))
                    .map(l -> l.substring("[rank 0] CREATED ".length()))
                    .findFirst()
                    .orElseThrow();
            assertThat(created).startsWith("/dev/shm/cohort-" + runId + "-0-");
            assertThat(console.out()).contains("[rank 0] LEFTOVER GONE " + created);
            assertThat(console.err()).contains("removed 1 shared-memory file(s) the workers left: [" + created + "]");
            assertThat(Path.of(created)).doesNotExist();
            assertThat(others).allMatch(Files::exists);
            assertNoneAlive(pids(dir));
        } finally {
            for (Path p : others) {
                Files.deleteIfExists(p);
            }
        }
    }

    private static Path shmFile(String runId, int restart, int port) throws IOException {
        Map<String, String> env = Map.of(
                "COHORT_RUN_ID",
                runId,
                "COHORT_RESTART_COUNT",
                Integer.toString(restart),
                "MASTER_ADDR",
                "127.0.0.1",
                "MASTER_PORT",
                Integer.toString(port));
        return Files.createFile(SharedMemoryFiles.path(env));
    }

    @Test
    @Timeout(60)
    void whenRestartsRunOutTheLastFailuresCodeIsTheExitCode() throws Exception {
        LaunchResult result = javaWorkers(options(2).maxRestarts(1).build(), "fail-start", dir.toString(), "9")
                .run();

        assertThat(result.exitCode()).isEqualTo(9);
        assertThat(result.restarts()).isEqualTo(1);
        assertThat(result.failures()).hasSize(2);
        assertThat(result.message()).contains("all 1 restart(s) used");
        assertNoneAlive(pids(dir));
    }

    @Test
    @Timeout(60)
    void linesOfDifferentWorkersNeverInterleave() throws Exception {
        int lines = 3000;
        LaunchResult result = javaWorkers(
                        options(2).logDir(dir.resolve("logs")).build(), "spam", dir.toString(), Integer.toString(lines))
                .run();

        assertThat(result.exitCode()).isZero();
        Pattern whole = Pattern.compile("\\[rank (\\d)] BEGIN \\1 \\d+ x{200} END");
        List<String> out = console.out().lines().collect(Collectors.toList());
        assertThat(out).hasSize(2 * lines).allMatch(l -> whole.matcher(l).matches());
        List<String> log = Files.readAllLines(dir.resolve("logs").resolve("rank-1.log"));
        assertThat(log).first().asString().contains("rank 1, restart 0");
        // The JVM's own notices (JAVA_TOOL_OPTIONS) may stand among the lines: count the worker's.
        List<String> written = log.stream().filter(l -> l.startsWith("BEGIN ")).collect(Collectors.toList());
        assertThat(written).hasSize(lines).last().asString().startsWith("BEGIN 1 " + (lines - 1) + " ");
    }

    @Test
    @Timeout(60)
    void rankZerosProgressIsShownAndNoMarkerReachesTheUserOrTheLogs() throws Exception {
        LaunchResult result = javaWorkers(
                        options(2).logDir(dir.resolve("logs")).build(), "progress", dir.toString(), "200")
                .run();

        assertThat(result.exitCode()).isZero();
        String all = console.out() + console.err();
        assertThat(all).doesNotContain("@cohort-progress").doesNotContain("cohort-progress");
        // Plain output (not a terminal): rank 0's first report at once, then at most one per 5 s.
        List<String> progress = console.out()
                .lines()
                .filter(l -> l.contains(": ") && l.contains(" steps"))
                .collect(Collectors.toList());
        assertThat(progress).isNotEmpty().allMatch(l -> l.startsWith("[rank 0] task of rank 0: "));
        assertThat(progress.get(0)).matches("\\[rank 0] task of rank 0: \\d+/200 steps \\(\\d+%\\), at step \\d+");
        assertThat(console.out()).contains("[rank 0] RANK 0 DONE", "[rank 1] RANK 1 DONE");
        for (int rank = 0; rank < 2; rank++) {
            String log = Files.readString(dir.resolve("logs").resolve("rank-" + rank + ".log"));
            assertThat(log)
                    .doesNotContain("cohort-progress")
                    .contains("task of rank " + rank + ": ")
                    .contains("RANK " + rank + " DONE");
        }
    }

    @Test
    @Timeout(60)
    void shellWorkersAndTheirChildrenAreStoppedWhenOneFails() throws Exception {
        String script = "sleep 300 & echo $! > " + dir + "/pid-$RANK-child-$!; echo $$ > /dev/null; "
                + ": > " + dir + "/pid-$RANK-$COHORT_RESTART_COUNT-$$; echo rank $RANK of $WORLD_SIZE; "
                + "if [ $RANK = 1 ]; then sleep 1; exit 7; fi; wait";
        LaunchResult result = shellWorkers(options(2).build(), script).run();

        assertThat(result.exitCode()).isEqualTo(7);
        assertThat(console.out()).contains("[rank 0] rank 0 of 2", "[rank 1] rank 1 of 2");
        assertThat(pids(dir)).hasSize(4);
        assertNoneAlive(pids(dir));
    }

    @Test
    @Timeout(60)
    void stopEndsTheRunAndEveryWorker() throws Exception {
        Launcher launcher = sleepingWorkers();
        CompletableFuture<LaunchResult> run = runAsync(launcher);
        awaitPid(dir, 0, 0, 20_000);
        awaitPid(dir, 1, 0, 20_000);
        launcher.stop();
        List<Long> pids = new ArrayList<>(pids(dir));
        assertNoneAlive(pids);
        assertThat(run.get(10, TimeUnit.SECONDS).exitCode()).isEqualTo(Launcher.STOPPED_EXIT_CODE);
    }

    @Test
    @Timeout(60)
    void workerKilledBySigkillIsReportedByTheSignalsName() throws Exception {
        CompletableFuture<LaunchResult> run = runAsync(sleepingWorkers());
        Processes.signal(awaitPid(dir, 1, 0, 20_000), "KILL");
        LaunchResult result = run.get(30, TimeUnit.SECONDS);

        assertThat(result.exitCode()).isEqualTo(137);
        assertThat(result.message()).contains("rank 1 killed by SIGKILL (exit 137)");
        assertNoneAlive(pids(dir));
    }

    private static CompletableFuture<LaunchResult> runAsync(Launcher launcher) {
        CompletableFuture<LaunchResult> f = new CompletableFuture<>();
        Thread t = new Thread(
                () -> {
                    try {
                        f.complete(launcher.run());
                    } catch (Throwable e) {
                        f.completeExceptionally(e);
                    }
                },
                "test-launcher");
        t.setDaemon(true);
        t.start();
        return f;
    }
}
