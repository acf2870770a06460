package dev.cohort.launcher;

import static dev.cohort.launcher.testing.Processes.assertNoneAlive;
import static dev.cohort.launcher.testing.Processes.awaitPid;
import static dev.cohort.launcher.testing.Processes.pids;
import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.launcher.testing.LauncherProcess;
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
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code ./cohort run}'s code path: LauncherMain in a child JVM, signalled like a user would. */
class LauncherCliTest {

    @TempDir
    Path dir;

    /** LauncherMain with {@code --master-port 0} and {@code args}, in a child JVM. */
    private LauncherProcess launcher(String... args) throws IOException {
        return launcher(List.of(), List.of(args));
    }

    private LauncherProcess launcher(List<String> jvmOptions, List<String> args) throws IOException {
        List<String> all = new ArrayList<>(List.of("--master-port", "0"));
        all.addAll(args);
        return LauncherProcess.start(jvmOptions, all, dir.resolve("launcher.out"));
    }

    /** A launcher of TestWorkers in {@code mode} (their folder: this test's), with {@code options}. */
    private LauncherProcess testWorkers(List<String> jvmOptions, String mode, String... options) throws IOException {
        List<String> args = new ArrayList<>(List.of(options));
        args.addAll(LauncherProcess.testWorker(mode, dir));
        return launcher(jvmOptions, args);
    }

    private String output() throws IOException {
        return Files.readString(dir.resolve("launcher.out"));
    }

    @Test
    @Timeout(60)
    void sigtermToTheLauncherStopsEveryWorkerEvenAStoppedOne() throws Exception {
        Path pidDir = dir.resolve("pids");
        List<String> args = new ArrayList<>(List.of("--nproc-per-node", "2", "--grace-period", "2"));
        args.addAll(LauncherProcess.testWorker("sleep", pidDir));
        LauncherProcess p = launcher(List.of(), args);
        awaitPid(pidDir, 0, 0, 20_000);
        Processes.signal(awaitPid(pidDir, 1, 0, 20_000), "STOP");

        p.process().destroy();
        int code = p.awaitExit(20);

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
        LauncherProcess p = launcher("--nproc-per-node", "2", "--", "sh", "-c", script);
        awaitPid(dir, 0, 0, 20_000);
        awaitPid(dir, 1, 0, 20_000);

        Processes.signal(p.process().pid(), "INT");
        p.awaitExit(20);

        assertThat(pids(dir)).hasSize(4);
        assertNoneAlive(pids(dir));
    }

    @Test
    @Timeout(60)
    void workersDieEvenWhenTheLauncherIsKilledBySigkill() throws Exception {
        String script = "sleep 300 & : > " + dir + "/pid-$RANK-child-$!; : > " + dir + "/pid-$RANK-0-$$; wait";
        LauncherProcess p = launcher("--nproc-per-node", "2", "--", "sh", "-c", script);
        awaitPid(dir, 0, 0, 20_000);
        awaitPid(dir, 1, 0, 20_000);
        // Each rank recorded its child before itself.

        p.process().destroyForcibly();
        p.awaitExit(10);

        List<Long> pids = pids(dir);
        assertThat(pids).hasSize(4);
        Processes.awaitNoneAlive(pids, Duration.ofSeconds(5));
    }

    @Test
    @Timeout(60)
    void exitCodeIsTheFailedWorkersForAMainClassAndForACommand() throws Exception {
        List<String> args = new ArrayList<>(List.of("--nproc-per-node", "2"));
        args.addAll(LauncherProcess.testWorker("fail-after", dir, "300", "6", "0"));
        assertThat(launcher(List.of(), args).awaitExit(30)).isEqualTo(6);
        assertThat(output())
                .contains(
                        "cohort: rank 0 exited with code 6; stopping the other workers",
                        "[rank 0] working",
                        "cohort: run failed (exit 6): rank 0 exited with code 6");
        assertNoneAlive(pids(dir));

        LauncherProcess shell =
                launcher("--nproc-per-node", "2", "--", "sh", "-c", "echo hi from $RANK; kill -KILL $$");
        assertThat(shell.awaitExit(30)).isEqualTo(137);
        assertThat(output()).contains("[rank 0] hi from 0", "killed by SIGKILL (exit 137)");

        LauncherProcess clean = launcher("--nproc-per-node", "2", "--", "sh", "-c", "echo $RANK");
        assertThat(clean.awaitExit(30)).isZero();
        assertThat(output()).contains("[rank 0] 0", "[rank 1] 1", "run finished");
    }

    @Test
    @Timeout(60)
    void aJavaWorkersLogRecordsAreOnePlainLineEach() throws Exception {
        assertThat(testWorkers(List.of(), "log", "--nproc-per-node", "1").awaitExit(30))
                .isZero();
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
        LauncherProcess p =
                testWorkers(List.of("-Djava.util.logging.config.file=" + quiet), "log", "--nproc-per-node", "1");
        assertThat(p.awaitExit(30)).isZero();
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
                            "a run over 2 nodes needs a job secret that every node shares",
                            "--secret-file job.secret on each",
                            "--insecure-no-secret",
                            "nothing was started");
        }
        assertThat(new File(marker)).doesNotExist();
    }

    @Test
    @Timeout(60)
    void backendChoosesTheWorkersEngineWithoutTouchingTheProgramsArguments() throws Exception {
        LauncherProcess p = launcher(
                "--backend", "TCP", "--nproc-per-node", "1", "--", "sh", "-c", "echo backend=$COHORT_BACKEND args=$#");
        assertThat(p.awaitExit(30)).isZero();
        assertThat(output())
                .contains(
                        "[rank 0] backend=tcp args=0",
                        "workers that choose no --distributed-backend use COHORT_BACKEND=tcp (--backend)");

        assertThat(launcher("--backend", "nccl", "--", "sh", "-c", "true").awaitExit(30))
                .isEqualTo(2);
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

    /**
     * Options the command line does not give come from the environment, then the configuration
     * file; the workers get the file's path; a setting the launcher cannot take is bad input naming it.
     */
    @Test
    @Timeout(90)
    void optionsComeFromTheEnvironmentThenTheConfigurationFile() throws Exception {
        Path config = Files.writeString(dir.resolve("job.properties"), "nproc-per-node=3\nbackend=tcp\n");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> worker = List.of("--", "sh", "-c", "echo config=$COHORT_CONFIG backend=$COHORT_BACKEND");
        java.util.function.BiFunction<List<String>, List<String>, Integer> run = (env, args) -> {
            List<String> all = new ArrayList<>(List.of("--master-port", "0"));
            all.addAll(args);
            all.addAll(worker);
            List<String> prefix = new ArrayList<>(List.of("env", "COHORT_CONFIG=" + config));
            prefix.addAll(env);
            try {
                return LauncherProcess.start(prefix, java, List.of(), all, dir.resolve("launcher.out"))
                        .awaitExit(60);
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        };

        assertThat(run.apply(List.of("COHORT_NPROC_PER_NODE=2"), List.of())).isZero();
        assertThat(output())
                .contains("[rank 1] config=" + config + " backend=tcp") // the file's backend, and the file itself
                .doesNotContain("[rank 2]"); // the environment's 2 workers, not the file's 3

        assertThat(run.apply(List.of("COHORT_NPROC_PER_NODE=2"), List.of("--nproc-per-node", "1")))
                .isZero();
        assertThat(output()).contains("[rank 0] config=").doesNotContain("[rank 1]"); // the command line first

        assertThat(run.apply(List.of("COHORT_MAX_RESTARTS=often"), List.of())).isEqualTo(2);
        assertThat(output())
                .contains("cohort run: --max-restarts must be ")
                .contains("got 'often'; --max-restarts is COHORT_MAX_RESTARTS in the environment")
                .contains("nothing was started");
    }

    @Test
    @Timeout(30)
    void everyOptionHasItsDescriptionFromTheResourceBundle() {
        CommandLine cli = LauncherMain.command();
        assertThat(cli.getCommandSpec().options())
                .allSatisfy(o -> assertThat(String.join(" ", o.description()))
                        .as(o.longestName())
                        .isNotBlank());
        assertThat(cli.getUsageMessage())
                .contains("workers on this node; auto = the number of cores", "(default: 29500)")
                .contains("Starts a group of workers", "Exit codes:", "bad input (nothing started)")
                .contains("--insecure-no-secret");
    }

    /** The distribution gives its workers lib/ only (not the command's own lib/tools/: DJL, an SLF4J binding). */
    @Test
    @Timeout(60)
    void theWorkersClassPathIsTheOneTheCommandNames() throws Exception {
        assertThat(testWorkers(List.of("-D" + LauncherMain.WORKERS_CLASSPATH + "=" + dir), "env")
                        .awaitExit(30))
                .isEqualTo(2);
        assertThat(output()).contains("main class " + TestWorker.class.getName() + " does not exist on the class path");

        String classPath = System.getProperty("java.class.path");
        assertThat(testWorkers(List.of("-D" + LauncherMain.WORKERS_CLASSPATH + "=" + classPath), "env")
                        .awaitExit(30))
                .isZero();
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
