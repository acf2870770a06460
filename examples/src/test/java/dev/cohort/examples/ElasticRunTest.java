package dev.cohort.examples;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.launcher.Console;
import dev.cohort.launcher.LaunchOptions;
import dev.cohort.launcher.LaunchResult;
import dev.cohort.launcher.Launcher;
import dev.cohort.launcher.WorkerProgram;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;
import dev.cohort.launcher.LauncherMain;
import dev.cohort.runtime.auth.JobSecret;
import dev.cohort.testkit.TwoHosts;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import org.junit.jupiter.api.Timeout;

/**
 * {@code cohort run --elastic 2} with three workers, one of which dies at step 20 of 60: the two
 * others re-form the group in their own processes (same pids, no restart, no checkpoint), go on
 * from the step that failed with the right sums at world 2, and the run succeeds.
 */
class ElasticRunTest {

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"tcp", "gloo", "shm", "hier"})
    @Timeout(180)
    void survivorsReformWithoutARestartAndFinish(String engine) throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        LaunchOptions options = LaunchOptions.builder().nprocPerNode(3).masterPort(0).elastic(2)
                .secret(Optional.of(dev.cohort.runtime.auth.JobSecret.generate())).build();
        WorkerProgram program = WorkerProgram.mainClass(ElasticWorker.class.getName(), List.of(engine, "60", "20", "1"));
        LaunchResult result;
        try (Launcher launcher = new Launcher(options, program).console(new Console(out, out))) {
            result = launcher.run();
        }
        String log = bytes.toString(StandardCharsets.UTF_8);
        System.out.println(log);
        assertThat(result.exitCode()).as(log).isZero();
        assertThat(log).contains("DYING worker 1", "go on as generation 1 of the group (elastic)")
                .doesNotContain("restarting the group");
        for (String survivor : List.of("0", "2")) {
            String started = find(log, "START worker " + survivor + " pid (\\d+)");
            String done = find(log, "DONE worker " + survivor + " pid (\\d+) generation 1 world 2 steps 60");
            assertThat(done).as("worker %s kept its process:\n%s", survivor, log).isEqualTo(started);
            assertThat(log).containsPattern("REFORMED worker " + survivor + " generation 1 rank \\d of 2 at step 20, "
                    + "root's 20");
        }
    }

    /**
     * Two namespaced hosts of two workers each, {@code --elastic 2}: worker 3 dies at step 20 of 60
     * (the other three go on at world 3, across both hosts), or worker 2 kills node 1's launcher
     * there (node 1 is lost with both its workers; node 0's two go on at world 2). The survivors
     * keep their processes and the run succeeds on every node still there.
     */
    @ParameterizedTest(name = "{0}, {1} lost")
    @CsvSource({"gloo, worker", "hier, worker", "gloo, node"})
    @Timeout(240)
    void acrossTwoHostsTheSurvivorsGoOnWhenAWorkerOrANodeIsLost(String engine, String lost, @TempDir Path dir)
            throws Exception {
        try (TwoHosts hosts = TwoHosts.createOrSkip()) {
            Path secret = dir.resolve("secret");
            JobSecret.generate().writeTo(secret);
            List<Process> nodes = new ArrayList<>();
            for (int node = 0; node < 2; node++) {
                List<String> cmd = new ArrayList<>(List.of(java.nio.file.Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-cp",
                        System.getProperty("java.class.path"), LauncherMain.class.getName(), "--nnodes", "2",
                        "--node-rank", Integer.toString(node), "--nproc-per-node", "2", "--master-addr",
                        TwoHosts.ADDRESS_A, "--master-port", "29500", "--elastic", "2", "--secret-file", secret.toString(),
                        "--grace-period", "2", "--join-timeout", "60", "--run-id", "elastic2", "--",
                        ElasticWorker.class.getName(), engine, "60", "20", lost.equals("worker") ? "3" : "launcher-of-2"));
                nodes.add(new ProcessBuilder(hosts.on(node, cmd)).redirectErrorStream(true)
                        .redirectOutput(dir.resolve("node-" + node + ".log").toFile()).start());
            }
            for (Process p : nodes) {
                if (!p.waitFor(180, java.util.concurrent.TimeUnit.SECONDS)) {
                    nodes.forEach(Process::destroyForcibly);
                }
            }
            String log0 = Files.readString(dir.resolve("node-0.log"));
            String log1 = Files.readString(dir.resolve("node-1.log"));
            String both = "node 0:\n" + log0 + "\nnode 1:\n" + log1;
            System.out.println(both);
            assertThat(nodes.get(0).exitValue()).as(both).isZero();
            assertThat(log0).as(both).contains("go on as generation 1 of the group (elastic) after: ")
                    .contains("run finished: all workers finished").doesNotContain("restarting the group");
            List<String> survivors = lost.equals("worker") ? List.of("0", "1", "2") : List.of("0", "1");
            if (lost.equals("worker")) {
                assertThat(nodes.get(1).exitValue()).as(both).isZero();
                assertThat(log0).as(both).contains("after: rank 3 on node 1 killed by SIGKILL");
            } else {
                assertThat(log0).as(both).contains("after: lost contact with the launcher of node 1");
            }
            String all = log0 + log1;
            for (String survivor : survivors) {
                String started = find(all, "START worker " + survivor + " pid (\\d+)");
                String done = find(all, "DONE worker " + survivor + " pid (\\d+) generation 1 world " + survivors.size()
                        + " steps 60");
                assertThat(done).as("worker %s kept its process:\n%s", survivor, both).isEqualTo(started);
                assertThat(all).containsPattern("REFORMED worker " + survivor + " generation 1 rank \\d of "
                        + survivors.size() + " at step 20, root's 20");
            }
        }
    }

    private static String find(String log, String regex) {
        Matcher m = Pattern.compile(regex).matcher(log);
        assertThat(m.find()).as("'%s' in:\n%s", regex, log).isTrue();
        return m.group(1);
    }
}
