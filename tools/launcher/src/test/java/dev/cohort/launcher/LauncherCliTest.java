package dev.cohort.launcher;

import static dev.cohort.launcher.testing.Processes.assertNoneAlive;
import static dev.cohort.launcher.testing.Processes.awaitPid;
import static dev.cohort.launcher.testing.Processes.pids;
import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.launcher.testing.Processes;
import dev.cohort.launcher.testing.TestWorker;
import dev.cohort.runtime.auth.JobSecret;
import java.io.File;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code ./cohort run}'s code path: LauncherMain in a child JVM, signalled like a user would. */
class LauncherCliTest {

    @TempDir
    Path dir;

    private Process launcher(String... args) throws IOException {
        return launcher(List.of(), args);
    }

    private Process launcher(List<String> jvmOptions, String... args) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(WorkerProgram.javaExecutable()));
        cmd.addAll(jvmOptions);
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), LauncherMain.class.getName()));
        cmd.addAll(List.of(args));
        return new ProcessBuilder(cmd)
                .redirectErrorStream(true)
                .redirectOutput(dir.resolve("launcher.out").toFile())
                .start();
    }

    private String output() throws IOException {
        return Files.readString(dir.resolve("launcher.out"));
    }

    private int awaitExit(Process p, int seconds) throws Exception {
        if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("launcher did not exit within " + seconds + " s; output:\n" + output());
        }
        return p.exitValue();
    }

    @Test
    @Timeout(60)
    void sigtermToTheLauncherStopsEveryWorkerEvenAStoppedOne() throws Exception {
        Path pidDir = dir.resolve("pids");
        Process p = launcher(
                "--nproc-per-node",
                "2",
                "--master-port",
                "0",
                "--grace-period",
                "2",
                "--",
                TestWorker.class.getName(),
                "sleep",
                pidDir.toString());
        awaitPid(pidDir, 0, 0, 20_000);
        Processes.signal(awaitPid(pidDir, 1, 0, 20_000), "STOP");

        p.destroy();
        int code = awaitExit(p, 20);

        assertThat(code).as("launcher exit code after SIGTERM").isEqualTo(143);
        assertThat(pids(pidDir)).hasSize(2);
        assertNoneAlive(pids(pidDir));
    }

    @Test
    @Timeout(60)
    void ctrlCToTheLauncherStopsShellWorkersAndTheirChildren() throws Exception {
        // A process started in the background without job control inherits SIGINT ignored, and so
        // does the launcher started from it: Ctrl-C cannot reach it there, as intended.
        org.junit.jupiter.api.Assumptions.assumeFalse(sigintIgnored(), "SIGINT is ignored in this process tree");
        String script = "sleep 300 & : > " + dir + "/pid-$RANK-child-$!; : > " + dir + "/pid-$RANK-0-$$; wait";
        Process p = launcher("--nproc-per-node", "2", "--master-port", "0", "--", "sh", "-c", script);
        awaitPid(dir, 0, 0, 20_000);
        awaitPid(dir, 1, 0, 20_000);

        Processes.signal(p.pid(), "INT");
        awaitExit(p, 20);

        assertThat(pids(dir)).hasSize(4);
        assertNoneAlive(pids(dir));
    }

    @Test
    @Timeout(60)
    void workersDieEvenWhenTheLauncherIsKilledBySigkill() throws Exception {
        String script = "sleep 300 & : > " + dir + "/pid-$RANK-child-$!; : > " + dir + "/pid-$RANK-0-$$; wait";
        Process p = launcher("--nproc-per-node", "2", "--master-port", "0", "--", "sh", "-c", script);
        awaitPid(dir, 0, 0, 20_000);
        awaitPid(dir, 1, 0, 20_000);
        Thread.sleep(200); // both children recorded too

        p.destroyForcibly();
        awaitExit(p, 10);

        List<Long> pids = pids(dir);
        assertThat(pids).hasSize(4);
        long deadline = System.currentTimeMillis() + 5_000;
        while (System.currentTimeMillis() < deadline && pids.stream().anyMatch(Processes::alive)) {
            Thread.sleep(100);
        }
        assertNoneAlive(pids);
    }

    @Test
    @Timeout(60)
    void exitCodeIsTheFailedWorkersForAMainClassAndForACommand() throws Exception {
        Process java = launcher(
                "--nproc-per-node",
                "2",
                "--master-port",
                "0",
                "--",
                TestWorker.class.getName(),
                "fail-after",
                dir.toString(),
                "300",
                "6",
                "0");
        assertThat(awaitExit(java, 30)).isEqualTo(6);
        assertThat(output())
                .contains(
                        "cohort: rank 0 exited with code 6; stopping the other workers",
                        "[rank 0] working",
                        "cohort: run failed (exit 6): rank 0 exited with code 6");
        assertNoneAlive(pids(dir));

        Process shell = launcher(
                "--nproc-per-node", "2", "--master-port", "0", "--", "sh", "-c", "echo hi from $RANK; kill -KILL $$");
        assertThat(awaitExit(shell, 30)).isEqualTo(137);
        assertThat(output()).contains("[rank 0] hi from 0", "killed by SIGKILL (exit 137)");

        Process clean = launcher("--nproc-per-node", "2", "--master-port", "0", "--", "sh", "-c", "echo $RANK");
        assertThat(awaitExit(clean, 30)).isZero();
        assertThat(output()).contains("[rank 0] 0", "[rank 1] 1", "run finished");
    }

    @Test
    @Timeout(60)
    void aJavaWorkersLogRecordsAreOnePlainLineEach() throws Exception {
        Process p = launcher(
                "--nproc-per-node", "1", "--master-port", "0", "--", TestWorker.class.getName(), "log", dir.toString());
        assertThat(awaitExit(p, 30)).isZero();
        List<String> lines = output().lines().toList();
        assertThat(lines)
                .contains(
                        "[rank 0] LOGGED",
                        "[rank 0] INFO dev.cohort.api.Backends: backend auto (from the program): none (one worker)");
        assertThat(lines)
                .containsSubsequence(
                        "[rank 0] WARNING dev.cohort.launcher.testing.TestWorker: a warning with " + "its cause",
                        "[rank 0] java.lang.IllegalStateException: the cause");
        assertThat(lines)
                .as("java.util.logging's default first line (time, class and method)")
                .noneMatch(l -> l.contains("Backends selectAuto"));
    }

    @Test
    @Timeout(60)
    void aLoggingConfigurationGivenToTheLauncherReachesItsWorkers() throws Exception {
        Path quiet = Files.writeString(
                dir.resolve("quiet.properties"),
                "handlers = java.util.logging.ConsoleHandler\ndev.cohort.level = OFF\n");
        Process p = launcher(
                List.of("-Djava.util.logging.config.file=" + quiet),
                "--nproc-per-node",
                "1",
                "--master-port",
                "0",
                "--",
                TestWorker.class.getName(),
                "log",
                dir.toString());
        assertThat(awaitExit(p, 30)).isZero();
        assertThat(output())
                .contains("[rank 0] LOGGED")
                .doesNotContain("backend auto")
                .doesNotContain("its cause");
    }

    @Test
    @Timeout(30)
    void badInputIsRejectedBeforeAnythingStarts() throws Exception {
        String marker = dir.resolve("started").toString();
        String[] program = {"--", "sh", "-c", ": > " + marker};
        assertThat(LauncherMain.run("--master-port", "0")).as("no program").isEqualTo(2);
        assertThat(LauncherMain.run(with(program, "--nproc-per-node", "two"))).isEqualTo(2);
        assertThat(LauncherMain.run(with(program, "--nproc-per-node", "-1"))).isEqualTo(2);
        assertThat(LauncherMain.run(with(program, "--max-restarts", "-3"))).isEqualTo(2);
        assertThat(LauncherMain.run(with(
                        program, "--nnodes", "2", "--node-rank", "2", "--master-addr", "h", "--insecure-no-secret")))
                .isEqualTo(2);
        assertThat(LauncherMain.run(with(program, "--master-port", "65536"))).isEqualTo(2);
        assertThat(LauncherMain.run("--master-port", "0", "--", "com.example.NoSuchMain"))
                .isEqualTo(2);
        try (ServerSocket taken = new ServerSocket(0)) {
            assertThat(LauncherMain.run(with(program, "--master-port", Integer.toString(taken.getLocalPort()))))
                    .as("master port taken")
                    .isEqualTo(2);
        }
        assertThat(new File(marker)).doesNotExist();
    }

    @Test
    @Timeout(30)
    void severalNodesWithoutASecretAreRefusedSayingWhatToDo() {
        Assumptions.assumeTrue(JobSecret.from(System.getenv()).isEmpty(), "this test's environment names a job secret");
        String marker = dir.resolve("started").toString();
        for (String nodes : List.of("2", "1:2")) {
            StringWriter err = new StringWriter();
            CommandLine cli = LauncherMain.command();
            cli.setErr(new PrintWriter(err, true));
            int code = cli.execute("--nnodes", nodes, "--master-addr", "127.0.0.1", "--", "sh", "-c", ": > " + marker);
            assertThat(code).as(err.toString()).isEqualTo(2);
            assertThat(err.toString())
                    .contains(
                            "--nnodes " + nodes + " needs a job secret that every node shares",
                            "--secret-file job.secret on each",
                            "--insecure-no-secret",
                            "nothing was started");
        }
        assertThat(new File(marker)).doesNotExist();
    }

    @Test
    @Timeout(60)
    void backendChoosesTheWorkersEngineWithoutTouchingTheProgramsArguments() throws Exception {
        Process p = launcher(
                "--backend",
                "TCP",
                "--nproc-per-node",
                "1",
                "--master-port",
                "0",
                "--",
                "sh",
                "-c",
                "echo backend=$COHORT_BACKEND args=$#");
        assertThat(awaitExit(p, 30)).isZero();
        assertThat(output())
                .contains(
                        "[rank 0] backend=tcp args=0",
                        "workers that choose no --distributed-backend use COHORT_BACKEND=tcp (--backend)");

        Process bad = launcher("--backend", "nccl", "--", "sh", "-c", "true");
        assertThat(awaitExit(bad, 30)).isEqualTo(2);
        assertThat(output())
                .contains(
                        "--backend must name an engine: one of ",
                        "tcp",
                        "gloo",
                        "shm",
                        "hier",
                        "mpi",
                        "auto",
                        "none",
                        "threads",
                        "; got 'nccl'",
                        "nothing was started");
        assertThat(LauncherMain.command().getUsageMessage())
                .contains("--backend=NAME")
                .contains("COHORT_BACKEND");
    }

    /** The distribution gives its workers lib/ only (not the command's own lib/tools/: DJL, an SLF4J binding). */
    @Test
    @Timeout(60)
    void theWorkersClassPathIsTheOneTheCommandNames() throws Exception {
        Process p = launcher(
                List.of("-D" + LauncherMain.WORKERS_CLASSPATH + "=" + dir),
                "--master-port",
                "0",
                "--",
                TestWorker.class.getName(),
                "env",
                dir.toString());
        assertThat(awaitExit(p, 30)).isEqualTo(2);
        assertThat(output()).contains("main class " + TestWorker.class.getName() + " does not exist on the class path");

        Process q = launcher(
                List.of("-D" + LauncherMain.WORKERS_CLASSPATH + "=" + System.getProperty("java.class.path")),
                "--master-port",
                "0",
                "--",
                TestWorker.class.getName(),
                "env",
                dir.toString());
        assertThat(awaitExit(q, 30)).isZero();
    }

    private static String[] with(String[] program, String... options) {
        List<String> all = new ArrayList<>(List.of(options));
        all.addAll(List.of(program));
        return all.toArray(new String[0]);
    }

    /** Whether this process ignores SIGINT (bit 2 of SigIgn in /proc/self/status). */
    private static boolean sigintIgnored() throws IOException {
        Path status = Path.of("/proc/self/status");
        if (!Files.exists(status)) {
            return false;
        }
        for (String line : Files.readAllLines(status)) {
            if (line.startsWith("SigIgn:")) {
                return (Long.parseUnsignedLong(line.substring(7).trim(), 16) & (1L << 1)) != 0;
            }
        }
        return false;
    }
}
