package dev.cohort.examples;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.launcher.Console;
import dev.cohort.launcher.LaunchOptions;
import dev.cohort.launcher.LaunchResult;
import dev.cohort.launcher.Launcher;
import dev.cohort.launcher.LauncherMain;
import dev.cohort.launcher.WorkerProgram;
import dev.cohort.runtime.auth.JobSecret;
import dev.cohort.testkit.TwoHosts;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.assertj.core.api.AbstractStringAssert;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Elastic runs of {@code cohort run}: workers or a node are lost at step 20 of 60, and the others
 * re-form the group in their own processes (same pids, no restart, no checkpoint), go on from the
 * step that failed with the right sums at the smaller world, and the run succeeds. On one host
 * with tcp and shm; across two namespaced hosts with gloo and hier (gloo and hier on one host run
 * the same launcher path).
 */
class ElasticRunTest {

    /** {@code --elastic 2} with three workers on one node, one of which dies. */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"tcp", "shm"})
    @Timeout(180)
    void survivorsReformWithoutARestartAndFinish(String engine) throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(
                !engine.equals("shm") || Runtime.version().feature() >= 22, "the shm engine needs JDK 22");
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        LaunchOptions options = LaunchOptions.builder()
                .nprocPerNode(3)
                .masterPort(0)
                .elastic(2)
                .secret(Optional.of(dev.cohort.runtime.auth.JobSecret.generate()))
                .build();
        WorkerProgram program =
                WorkerProgram.mainClass(ElasticWorker.class.getName(), List.of(engine, "60", "20", "1"));
        LaunchResult result;
        try (Launcher launcher = new Launcher(options, program).console(new Console(out, out))) {
            result = launcher.run();
        }
        String log = bytes.toString(StandardCharsets.UTF_8);
        System.out.println(log);
        assertThat(result.exitCode()).as(log).isZero();
        assertThat(log)
                .contains("DYING worker 1", "go on as generation 1 of the group (elastic)")
                .doesNotContain("restarting the group");
        for (String survivor : List.of("0", "2")) {
            String started = find(log, "START worker " + survivor + " pid (\\d+)");
            String done = find(log, "DONE worker " + survivor + " pid (\\d+) generation 1 world 2 steps 60");
            assertThat(done)
                    .as("worker %s kept its process:\n%s", survivor, log)
                    .isEqualTo(started);
            assertThat(log)
                    .containsPattern(
                            "REFORMED worker " + survivor + " generation 1 rank \\d of 2 at step 20, " + "root's 20")
                    .contains("REFORM RECORDED worker " + survivor + ": [generation 0 to 1]; observers heard [1]");
        }
    }

    /**
     * Two namespaced hosts of two workers each, {@code --elastic 2}: worker 3 dies at step 20 of 60
     * on hier (on gloo: the {@code --nnodes 2:3} test below)
     * (the other three go on at world 3, across both hosts), or worker 2 kills node 1's launcher
     * there (node 1 is lost with both its workers; node 0's two go on at world 2). The survivors
     * keep their processes and the run succeeds on every node still there.
     */
    @ParameterizedTest(name = "{0}, {1} lost")
    @CsvSource({"hier, worker", "gloo, node"})
    @Timeout(240)
    void acrossTwoHostsTheSurvivorsGoOnWhenAWorkerOrANodeIsLost(String engine, String lost, @TempDir Path dir)
            throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(
                !engine.equals("hier") || Runtime.version().feature() >= 22, "the hier engine needs JDK 22");
        try (TwoHosts hosts = TwoHosts.createOrSkip()) {
            Nodes run = twoNodes(
                    hosts,
                    dir,
                    engine,
                    List.of("--nnodes", "2", "--elastic", "2", "--join-timeout", "60"),
                    lost.equals("worker") ? "3" : "launcher-of-2");
            if (lost.equals("worker")) {
                assertThat(run.exit1()).as(run.both()).isZero();
                run.assertLog0().contains("after: rank 3 on node 1 killed by SIGKILL");
                survivorsWentOn(run, List.of("0", "1", "2"));
            } else {
                run.assertLog0().contains("after: lost contact with the launcher of node 1");
                survivorsWentOn(run, List.of("0", "1"));
            }
        }
    }

    /**
     * {@code --nnodes 2:3 --elastic 3} with only two nodes started: once the join timeout passes the
     * run starts with them (world 4, two groups), and when worker 3 dies the other three go on.
     */
    @Test
    @Timeout(240)
    void aRunOfTwoToThreeNodesStartsWithTheTwoThatCameAndGoesOnElastically(@TempDir Path dir) throws Exception {
        try (TwoHosts hosts = TwoHosts.createOrSkip()) {
            Nodes run = twoNodes(
                    hosts, dir, "gloo", List.of("--nnodes", "2:3", "--elastic", "3", "--join-timeout", "5"), "3");
            run.assertLog0()
                    .contains("the run starts with nodes [0, 1] of --nnodes 2:3")
                    .contains("starting 2 worker(s) (ranks 0..1 of 4)")
                    .contains("GROUPS worker 0 of 2");
            assertThat(run.exit1()).as(run.both()).isZero();
            survivorsWentOn(run, List.of("0", "1", "2"));
        }
    }

    /**
     * {@code --nnodes 1:2}: node 0 starts alone once the join timeout passes; node 1's launcher comes
     * later and joins the running group. The members take its two workers in at their next
     * boundary (every 10 steps) and all four go on at world 4, without a restart.
     */
    @Test
    @Timeout(240)
    void aNodeThatComesLaterJoinsTheRunningGroupAtTheMembersNextBoundary(@TempDir Path dir) throws Exception {
        try (TwoHosts hosts = TwoHosts.createOrSkip()) {
            Nodes run = twoNodes(
                    hosts,
                    dir,
                    "gloo",
                    List.of("--nnodes", "1:2", "--join-timeout", "3"),
                    "none",
                    List.of("4"),
                    "START worker 0");
            run.bothSucceeded();
            run.assertLog0()
                    .contains("the run starts with nodes [0] of --nnodes 1:2")
                    .contains("go on as generation 1 of the group (elastic) after: node 1 joins with 2 worker(s)")
                    .contains("run finished: all workers finished (4 of them in generation 1)");
            run.assertLog1().contains("joining the running group (elastic): starting 2 worker(s) " + "(ranks 2..3)");
            String all = run.log0() + run.log1();
            for (String member : List.of("0", "1")) {
                String started = find(all, "START worker " + member + " pid (\\d+)");
                assertThat(find(all, "DONE worker " + member + " pid (\\d+) generation 1 world 4"))
                        .isEqualTo(started);
                assertThat(all).containsPattern("GREW worker " + member + " generation 1 world 4 at step \\d+0");
            }
            for (String joiner : List.of("2", "3")) {
                assertThat(all)
                        .containsPattern("JOINED worker " + joiner + " generation 1 rank " + joiner + " of 4 at "
                                + "root's step \\d+0")
                        .containsPattern("DONE worker " + joiner + " pid \\d+ generation 1 world 4");
            }
        }
    }

    /**
     * The demo trainer with a node that joins: node 0 starts alone (two workers: JavaCPP's PyTorch
     * on gloo, or DJL on tcp), node 1's launcher comes once the first epoch is done, and at the next
     * epoch boundary the members take its two workers in: they get the root's model, optimizer
     * state and position, and the four train the remaining epochs together.
     */
    @ParameterizedTest(name = "{0} on {1}")
    @CsvSource({"torch, gloo", "djl, tcp"})
    @Timeout(300)
    void theDemoTakesInAJoiningNodeAtAnEpochBoundary(String framework, String engine, @TempDir Path dir)
            throws Exception {
        RealData.assumeInstalled();
        try (TwoHosts hosts = TwoHosts.createOrSkip()) {
            Path json = dir.resolve("summary.json");
            Nodes run = twoNodes(
                    hosts,
                    dir,
                    List.of("--nnodes", "1:2", "--join-timeout", "3"),
                    List.of(
                            FashionMnistTrainer.class.getName(),
                            "--framework",
                            framework,
                            "--distributed-backend",
                            engine,
                            "--model",
                            "mlp",
                            "--epochs",
                            "8",
                            "--batch-size",
                            "1024",
                            "--json",
                            json.toString()),
                    "epoch 1/8 done");
            run.bothSucceeded();
            run.assertLog0()
                    .containsPattern("workers joined: going on with 4 workers as generation 1 "
                            + "from step \\d+, 1024 examples per worker")
                    .contains("the group re-formed 1 time(s) without a " + "restart; 2 worker(s) started, 4 finished");
            run.assertLog1()
                    .containsPattern("joined the running group as rank 2 of 4 "
                            + "\\(generation 1\\) at epoch [2-8], step \\d+");
            com.fasterxml.jackson.databind.JsonNode summary =
                    new com.fasterxml.jackson.databind.ObjectMapper().readTree(json.toFile());
            assertThat(summary.get("workers").asInt()).isEqualTo(4);
            assertThat(summary.get("restarts").asInt()).isZero();
            assertThat(summary.get("test_accuracy").asDouble()).as(run.both()).isGreaterThan(0.75);
        }
    }

    /** Node 0's and node 1's launchers and their logs, both ended. */
    private record Nodes(int exit0, int exit1, String log0, String log1) {
        String both() {
            return "node 0:\n" + log0 + "\nnode 1:\n" + log1;
        }

        /** Asserts that both nodes' launchers exited 0, showing both logs where not. */
        void bothSucceeded() {
            assertThat(exit0).as(both()).isZero();
            assertThat(exit1).as(both()).isZero();
        }

        /** Node 0's log, to assert on; a failure shows both logs. */
        AbstractStringAssert<?> assertLog0() {
            return assertThat(log0).as(both());
        }

        /** Node 1's log, to assert on; a failure shows both logs. */
        AbstractStringAssert<?> assertLog1() {
            return assertThat(log1).as(both());
        }
    }

    /** Launches node 0 on host A and node 1 on host B, two ElasticWorkers each, with {@code options}; waits for both. */
    private static Nodes twoNodes(TwoHosts hosts, Path dir, String engine, List<String> options, String dying)
            throws Exception {
        return twoNodes(hosts, dir, engine, options, dying, List.of(), null);
    }

    /**
     * As {@link #twoNodes(TwoHosts, Path, String, List, String)}, with {@code more} worker arguments;
     * node 1 starts once node 0's log says {@code node1After} (when not null).
     */
    private static Nodes twoNodes(
            TwoHosts hosts,
            Path dir,
            String engine,
            List<String> options,
            String dying,
            List<String> more,
            String node1After)
            throws Exception {
        List<String> program = new ArrayList<>(List.of(ElasticWorker.class.getName(), engine, "60", "20", dying));
        program.addAll(more);
        return twoNodes(hosts, dir, options, program, node1After);
    }

    /** Node 0 on host A and node 1 on host B, two workers each running {@code program} (main class, arguments). */
    private static Nodes twoNodes(
            TwoHosts hosts, Path dir, List<String> options, List<String> program, String node1After) throws Exception {
        Path secret = dir.resolve("secret");
        JobSecret.generate().writeTo(secret);
        List<Process> nodes = new ArrayList<>();
        java.util.concurrent.CompletableFuture<Boolean> node0Said = new java.util.concurrent.CompletableFuture<>();
        Thread node0Copier = null;
        for (int node = 0; node < 2; node++) {
            List<String> cmd = new ArrayList<>(List.of(
                    Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-cp",
                    System.getProperty("java.class.path"),
                    LauncherMain.class.getName(),
                    "--node-rank",
                    Integer.toString(node),
                    "--nproc-per-node",
                    "2",
                    "--master-addr",
                    TwoHosts.ADDRESS_A,
                    "--master-port",
                    "29500",
                    "--secret-file",
                    secret.toString(),
                    "--grace-period",
                    "2",
                    "--run-id",
                    "elastic2"));
            cmd.addAll(options);
            cmd.add("--");
            cmd.addAll(program);
            if (node == 1 && node1After != null) {
                // node 0's marker, or the end of its output: then node 1 starts (and the assertions tell which)
                node0Said.get(120, java.util.concurrent.TimeUnit.SECONDS);
            }
            Path log = dir.resolve("node-" + node + ".log");
            ProcessBuilder builder = new ProcessBuilder(hosts.on(node, cmd)).redirectErrorStream(true);
            if (node == 0 && node1After != null) {
                Process started = builder.start();
                node0Copier = copyWatching(started, log, node1After, node0Said);
                nodes.add(started);
            } else {
                nodes.add(builder.redirectOutput(log.toFile()).start());
            }
        }
        for (Process p : nodes) {
            if (!p.waitFor(180, java.util.concurrent.TimeUnit.SECONDS)) {
                nodes.forEach(Process::destroyForcibly);
                p.waitFor();
            }
        }
        if (node0Copier != null) {
            node0Copier.join(10_000); // the output ended with the process: the log is whole
        }
        Nodes run = new Nodes(
                nodes.get(0).exitValue(),
                nodes.get(1).exitValue(),
                Files.readString(dir.resolve("node-0.log")),
                Files.readString(dir.resolve("node-1.log")));
        System.out.println(run.both());
        return run;
    }

    /**
     * Copies {@code process}'s output into {@code log} line by line on a thread of its own;
     * completes {@code said} with true at the first line containing {@code marker}, or with false
     * at the end of the output. Join the thread before reading the log whole.
     */
    private static Thread copyWatching(
            Process process, Path log, String marker, java.util.concurrent.CompletableFuture<Boolean> said) {
        Thread copier = new Thread(
                () -> {
                    try (var in = process.inputReader(StandardCharsets.UTF_8);
                            var out = Files.newBufferedWriter(log, StandardCharsets.UTF_8)) {
                        for (String line = in.readLine(); line != null; line = in.readLine()) {
                            out.write(line);
                            out.newLine();
                            out.flush();
                            if (line.contains(marker)) {
                                said.complete(true);
                            }
                        }
                    } catch (java.io.IOException e) {
                        said.completeExceptionally(e);
                    } finally {
                        said.complete(false);
                    }
                },
                "copy-" + log.getFileName());
        copier.setDaemon(true);
        copier.start();
        return copier;
    }

    /** Node 0 succeeded, and each of {@code survivors} kept its process into generation 1 and finished there. */
    private static void survivorsWentOn(Nodes run, List<String> survivors) {
        assertThat(run.exit0()).as(run.both()).isZero();
        run.assertLog0()
                .contains("go on as generation 1 of the group (elastic) after: ")
                .contains("run finished: all workers finished")
                .doesNotContain("restarting the group");
        String all = run.log0() + run.log1();
        for (String survivor : survivors) {
            String started = find(all, "START worker " + survivor + " pid (\\d+)");
            String done = find(
                    all,
                    "DONE worker " + survivor + " pid (\\d+) generation 1 world " + survivors.size() + " steps 60");
            assertThat(done)
                    .as("worker %s kept its process:\n%s", survivor, run.both())
                    .isEqualTo(started);
            assertThat(all)
                    .containsPattern("REFORMED worker " + survivor + " generation 1 rank \\d of " + survivors.size()
                            + " at step 20, root's 20");
        }
    }

    private static String find(String log, String regex) {
        Matcher m = Pattern.compile(regex).matcher(log);
        assertThat(m.find()).as("'%s' in:\n%s", regex, log).isTrue();
        return m.group(1);
    }
}
