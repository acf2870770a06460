package dev.cohort.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.cohort.api.JobEnvironment;
import dev.cohort.testkit.TwoHosts;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Fashion-MNIST trainer, unchanged and with no backend named, under the launchers users
 * already run: torchrun (Debian's PyTorch), Open MPI's mpirun, and Slurm's variables as srun sets
 * them. Each trains 2 ranks on the real data for a few dozen steps and must say it trained on 2
 * workers (never alone) and learn. Skipped where the launcher is not installed (CI installs them).
 */
@ExtendWith(RealData.Required.class)
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class LaunchersTest {

    private static final String PYTHON = "/usr/bin/python3";
    private static final Duration DEADLINE = Duration.ofSeconds(200);
    /** What auto picks for two ranks on one host: shared memory (JDK 22+), with no JVM flag. */
    private static final String ONE_HOST_ENGINE = Runtime.version().feature() >= 22 ? "shm" : "gloo";

    @TempDir
    Path dir;

    /** Trains under torchrun, and when a rank dies torchrun restarts the group, which resumes. */
    @Test
    void torchrunRestartsAFailedGroupWhichResumesFromItsCheckpoint() throws Exception {
        assumeTorchrun();
        Run run = run(
                torchrun(
                        1,
                        60,
                        List.of(
                                "--checkpoint-dir",
                                dir.resolve("ckpt").toString(),
                                "--checkpoint-every",
                                "20",
                                "--resume")),
                Map.of(FaultDrill.AT_STEP, "30"));
        run.assertTrainedTogether();
        assertThat(run.output)
                .contains("launched by torchrun: rank 0 of 2", "joining torchrun's store")
                .contains("training mlp on 2 worker(s) (" + ONE_HOST_ENGINE + ")")
                .contains("fault drill: rank 1 kills itself")
                .contains("restarts 1, resumed from step 20");
    }

    @Test
    void torchrunNamesTheJavaFailureFromItsErrorFile() throws Exception {
        assumeTorchrun();
        Run run = run(
                torchrun(
                        0, 60, List.of("--data-dir", dir.resolve("no-such-data").toString())),
                Map.of());
        assertThat(run.exit).as("exit code; output:\n%s", run.output).isNotZero();
        // torchrun's summary quotes the error file each worker wrote (its root cause), not "<N/A>".
        assertThat(run.output)
                .contains("ChildFailedError")
                .contains("no-such-data")
                .containsPattern("error_file: /\\S+error.json");
    }

    @Test
    void trainsUnderMpirun() throws Exception {
        Run run = run(mpirun(trainer(60, List.of())), Map.of());
        run.assertTrainedTogether();
        assertThat(run.output)
                .contains("launched by Open MPI's mpirun: rank 0 of 2")
                .contains("training mlp on 2 worker(s) (" + ONE_HOST_ENGINE + ")");
    }

    @Test
    void aPlainCollectivesProgramRunsUnderTorchrunAndMpirun() throws Exception {
        assumeTorchrun();
        List<String> check = program(CollectivesCheck.class, List.of());
        for (List<String> cmd : List.of(torchrun(0, check), mpirun(check))) {
            Run run = run(cmd, Map.of());
            assertThat(run.exit).as("exit code; output:\n%s", run.output).isZero();
            // Both ranks on this host, said by the launcher: shared memory where the JDK has it.
            assertThat(run.output).contains("collectives ok: 2 workers on " + ONE_HOST_ENGINE + ", local rank 0 of 2");
        }
    }

    private static List<String> mpirun(List<String> program) {
        assumeTrue(
                Files.isExecutable(Path.of("/usr/bin/mpirun")),
                "Open MPI is not installed (apt-get install openmpi-bin)");
        List<String> cmd = new ArrayList<>(List.of(
                "/usr/bin/mpirun",
                "--allow-run-as-root",
                "--oversubscribe",
                "-np",
                "2",
                "--mca",
                "btl",
                "self,tcp",
                "-x",
                "MASTER_ADDR=127.0.0.1",
                "-x",
                "MASTER_PORT=" + freePort()));
        cmd.addAll(program);
        return cmd;
    }

    @Test
    void trainsUnderSlurmsVariables() throws Exception {
        // srun -n 2 on one node: what each task gets. The rendezvous port comes from the job id.
        int port = freePort();
        long jobId = port - JobEnvironment.SLURM_PORT_BASE; // ports are 20000-29999, so the id is below the span
        Run run = ranks(
                r -> trainer(60, List.of()),
                r -> Map.of(
                        "SLURM_PROCID",
                        Integer.toString(r),
                        "SLURM_NTASKS",
                        "2",
                        "SLURM_LOCALID",
                        Integer.toString(r),
                        "SLURM_NODEID",
                        "0",
                        "SLURM_NNODES",
                        "1",
                        "SLURM_STEP_TASKS_PER_NODE",
                        "2",
                        "SLURM_STEP_NODELIST",
                        "localhost",
                        "SLURM_JOB_ID",
                        Long.toString(jobId),
                        "SLURM_STEP_ID",
                        "0"));
        run.assertTrainedTogether();
        assertThat(run.output)
                .contains("launched by Slurm's srun: rank 0 of 2, rendezvous at localhost:" + port)
                .contains("training mlp on 2 worker(s) (" + ONE_HOST_ENGINE + ")");
    }

    @Test
    void ranksToldOnlyTheirRankLearnTheyShareAHostBeforeTheEngineIsChosen() throws Exception {
        // A launcher of one's own that sets RANK, WORLD_SIZE and MASTER_* alone, both ranks on this host.
        int port = freePort();
        Run run = ranks(r -> trainer(40, List.of()), r -> RankEnvironment.of("127.0.0.1", port, r, 2, Map.of()));
        run.assertTrainedTogether();
        assertThat(run.output)
                .contains("host layout learned at rendezvous: 1 host(s); rank 0's holds 2 of the 2 ranks")
                .contains("training mlp on 2 worker(s) (" + ONE_HOST_ENGINE + ")");
    }

    @Test
    void trainsAcrossPodsThatSayOnlyTheirRankAndLearnsTheyAreTwoHosts() throws Exception {
        // A one-pod-per-rank Kubernetes job as two machines look: own network, host name and /dev/shm
        // each (namespaces on one kernel otherwise share /dev/shm, and shm would seem to work).
        try (TwoHosts hosts = TwoHosts.createOrSkip()) {
            Run run = inPods(hosts, trainer(40, List.of()));
            run.assertTrainedTogether();
            assertThat(run.output)
                    .contains(
                            "launched by Kubernetes: rank 0 of 2",
                            "training mlp on 2 worker(s) (gloo)",
                            "host layout learned at rendezvous: 2 host(s)")
                    .doesNotContain("(shm)");
            // A plain collectives program sees the learned layout: each pod its own host.
            Run check = inPods(hosts, program(CollectivesCheck.class, List.of()));
            assertThat(check.exit).as("exit code; output:\n%s", check.output).isZero();
            assertThat(check.output).contains("collectives ok: 2 workers on gloo, local rank 0 of 1");
        }
    }

    /** {@code command} as rank r of 2 in pod r, told only MASTER_ADDR/PORT, RANK and WORLD_SIZE. */
    private Run inPods(TwoHosts hosts, List<String> command) throws Exception {
        int port = freePort();
        return ranks(
                r -> pod(hosts, r, command),
                r -> RankEnvironment.of(hosts.address(0), port, r, 2, Map.of("KUBERNETES_SERVICE_HOST", "10.96.0.1")));
    }

    /** Two ranks started by this test as a launcher would: rank r runs {@code command(r)} with {@code env(r)} added. */
    private Run ranks(IntFunction<List<String>> command, IntFunction<Map<String, String>> env) throws Exception {
        List<Process> ranks = new ArrayList<>();
        List<Path> logs = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            Path log = Files.createTempFile(dir, "rank-" + r + "-", ".log");
            ProcessBuilder pb = new ProcessBuilder(command.apply(r))
                    .redirectErrorStream(true)
                    .redirectOutput(log.toFile());
            clean(pb.environment()).putAll(env.apply(r));
            ranks.add(pb.start());
            logs.add(log);
        }
        StringBuilder output = new StringBuilder();
        int exit = 0;
        for (int r = 0; r < 2; r++) {
            exit |= waitFor(ranks.get(r));
            output.append(Files.readString(logs.get(r)));
        }
        return new Run(exit, output.toString());
    }

    /** {@code command} in a pod of its own: its own network (host {@code r}), host name and /dev/shm. */
    private static List<String> pod(TwoHosts hosts, int r, List<String> command) {
        List<String> pod = new ArrayList<>(List.of(
                "unshare",
                "--uts",
                "--mount",
                "sh",
                "-c",
                "hostname trainer-" + r + " && mount -t tmpfs tmpfs /dev/shm && exec \"$@\"",
                "pod"));
        pod.addAll(command);
        return hosts.on(r, pod);
    }

    private static void assumeTorchrun() throws Exception {
        Process p = new ProcessBuilder(PYTHON, "-c", "import torch.distributed.run")
                .redirectErrorStream(true)
                .start();
        assumeTrue(
                Files.isExecutable(Path.of(PYTHON)) && waitFor(p) == 0,
                "torchrun is not installed (apt-get install python3-torch libopenblas0-pthread)");
    }

    /**
     * torchrun with 2 workers on this host. Debian's torchrun (PyTorch 1.13) on Python 3.11 cannot
     * parse "0" or "3" for --redirects/--tee (its Std.from_str returns None for them), so stdout is
     * redirected and teed with "1".
     */
    private static List<String> torchrun(int maxRestarts, int steps, List<String> extra) {
        return torchrun(maxRestarts, trainer(steps, extra));
    }

    private static List<String> torchrun(int maxRestarts, List<String> program) {
        List<String> cmd = new ArrayList<>(List.of(
                PYTHON,
                "-m",
                "torch.distributed.run",
                "--nproc_per_node",
                "2",
                "--master_port",
                Integer.toString(freePort()),
                "--max_restarts",
                Integer.toString(maxRestarts),
                "--monitor_interval",
                "1",
                "--no_python",
                "--redirects",
                "1",
                "--tee",
                "1"));
        cmd.addAll(program);
        return cmd;
    }

    /** The trainer as a user starts it: java, the class path, the main class; no backend named. */
    private static List<String> trainer(int steps, List<String> extra) {
        List<String> args =
                new ArrayList<>(List.of("--epochs", "1", "--max-steps", Integer.toString(steps), "--threads", "1"));
        args.addAll(extra);
        return program(FashionMnistTrainer.class, args);
    }

    /**
     * {@code main} in a JVM as a user starts it: no Vector API module (the shm engine runs without
     * it), native access granted where the JDK would otherwise warn of it.
     */
    private static List<String> program(Class<?> main, List<String> args) {
        List<String> cmd = new ArrayList<>(List.of(
                Paths.get(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx1g"));
        if (Runtime.version().feature() >= 22) {
            cmd.add("--enable-native-access=ALL-UNNAMED");
        }
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), main.getName()));
        cmd.addAll(args);
        return cmd;
    }

    private Run run(List<String> cmd, Map<String, String> env) throws Exception {
        Path log = dir.resolve("launcher.log");
        ProcessBuilder pb = new ProcessBuilder(cmd)
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .directory(dir.toFile());
        clean(pb.environment()).putAll(env);
        int exit = waitFor(pb.start());
        return new Run(exit, Files.readString(log));
    }

    /** This JVM's environment without any launcher's variables (a test may run under one). */
    private static Map<String, String> clean(Map<String, String> env) {
        env.keySet()
                .removeIf(k -> k.startsWith("SLURM_")
                        || k.startsWith("OMPI_")
                        || k.startsWith("TORCHELASTIC_")
                        || k.startsWith("COHORT_")
                        || List.of(
                                        "RANK",
                                        "WORLD_SIZE",
                                        "LOCAL_RANK",
                                        "LOCAL_WORLD_SIZE",
                                        "GROUP_RANK",
                                        "GROUP_WORLD_SIZE",
                                        "MASTER_ADDR",
                                        "MASTER_PORT")
                                .contains(k));
        return env;
    }

    private static int waitFor(Process p) throws InterruptedException {
        if (!p.waitFor(DEADLINE.toSeconds(), TimeUnit.SECONDS)) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
            p.waitFor(10, TimeUnit.SECONDS);
            return -1;
        }
        return p.exitValue();
    }

    /** A port that was free a moment ago, below the ephemeral range (see testkit's JvmWorkers.freePort). */
    private static int freePort() {
        for (int attempt = 0; attempt < 100; attempt++) {
            int port = 20_000 + ThreadLocalRandom.current().nextInt(10_000);
            try (java.net.ServerSocket s = new java.net.ServerSocket(port)) {
                return port;
            } catch (IOException e) {
                // taken: another
            }
        }
        throw new IllegalStateException("no free port in 20000-29999");
    }

    private record Run(int exit, String output) {

        void assertTrainedTogether() {
            assertThat(exit).as("exit code; output:\n%s", output).isZero();
            assertThat(output).contains("training mlp on 2 worker(s)").doesNotContain("train alone");
            Matcher m = Pattern.compile("test accuracy ([0-9.]+), final loss").matcher(output);
            assertThat(m.find()).as("a summary line in:\n%s", output).isTrue();
            assertThat(Double.parseDouble(m.group(1))).isGreaterThan(0.6);
        }
    }
}
