package dev.cohort.launcher;

import static dev.cohort.launcher.testing.Processes.assertNoneAlive;
import static dev.cohort.launcher.testing.Processes.awaitPid;
import static dev.cohort.launcher.testing.Processes.pids;
import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.api.Backends;
import dev.cohort.launcher.testing.LauncherProcess;
import dev.cohort.launcher.testing.Processes;
import dev.cohort.launcher.testing.TestWorker;
import dev.cohort.runtime.auth.JobSecret;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two launchers on two hosts, each host a network namespace joined by a veth pair (192.0.2.1 and
 * 192.0.2.2), form one group of 4 workers. Needs root and iproute2; skipped otherwise.
 */
@Timeout(120)
class MultiNodeTest {

    private static final String MASTER = "192.0.2.1";
    private static final String SUFFIX = Long.toString(ProcessHandle.current().pid() % 100_000);
    private static final String NS0 = "cohort-" + SUFFIX + "-0";
    private static final String NS1 = "cohort-" + SUFFIX + "-1";

    @TempDir
    Path dir;

    @BeforeAll
    static void createHosts() throws Exception {
        Assumptions.assumeTrue(
                sh("command -v ip >/dev/null").isEmpty(),
                "multi-node test skipped: `ip` (iproute2) is missing; apt-get install iproute2");
        Assumptions.assumeTrue(
                sh("[ \"$(id -u)\" = 0 ]").isEmpty(), "multi-node test skipped: needs root for network namespaces");
        String v0 = "cv" + SUFFIX + "a";
        String v1 = "cv" + SUFFIX + "b";
        String error = sh("ip netns add " + NS0 + " && ip netns add " + NS1
                + " && ip link add " + v0 + " type veth peer name " + v1
                + " && ip link set " + v0 + " netns " + NS0 + " && ip link set " + v1 + " netns " + NS1
                + " && ip -n " + NS0 + " addr add " + MASTER + "/24 dev " + v0
                + " && ip -n " + NS1 + " addr add 192.0.2.2/24 dev " + v1
                + " && for n in " + NS0 + " " + NS1 + "; do ip -n $n link set lo up; done"
                + " && ip -n " + NS0 + " link set " + v0 + " up && ip -n " + NS1 + " link set " + v1 + " up");
        if (!error.isEmpty()) {
            deleteHosts();
            Assumptions.abort("multi-node test skipped: cannot create network namespaces here: " + error);
        }
    }

    @AfterAll
    static void deleteHosts() throws Exception {
        sh("ip netns del " + NS0 + "; ip netns del " + NS1 + "; true");
    }

    // Runs a shell command; returns its output when it fails, else "".
    private static String sh(String command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("sh", "-c", command)
                .redirectErrorStream(true)
                .start();
        String out = new String(p.getInputStream().readAllBytes()).trim();
        return p.waitFor() == 0 ? "" : (out.isEmpty() ? "exit " + p.exitValue() : out);
    }

    private LauncherProcess node(String ns, int nodeRank, List<String> options, String... workerArgs)
            throws IOException {
        return node(ns, nodeRank, WorkerProgram.javaExecutable(), 2, options, workerArgs);
    }

    /**
     * A node's launcher of {@code workers} workers, run by {@code java} (its workers run on the same
     * JDK); with this test's secret file unless {@code options} name a secret or none. Workers:
     * TestWorker with {@code workerArgs}, a mode and its arguments.
     */
    private LauncherProcess node(
            String ns, int nodeRank, String java, int workers, List<String> options, String... workerArgs)
            throws IOException {
        List<String> args = new ArrayList<>(List.of(
                "--nnodes",
                "2",
                "--node-rank",
                Integer.toString(nodeRank),
                "--nproc-per-node",
                Integer.toString(workers)));
        args.addAll(List.of("--master-addr", MASTER, "--master-port", "29500", "--grace-period", "2"));
        args.addAll(List.of("--join-timeout", "30", "--run-id", "multi"));
        args.addAll(options);
        if (!options.contains("--secret-file") && !options.contains("--insecure-no-secret")) {
            args.addAll(List.of("--secret-file", secretFile().toString()));
        }
        args.add("--");
        args.add(TestWorker.class.getName());
        args.addAll(List.of(workerArgs));
        return LauncherProcess.start(List.of("ip", "netns", "exec", ns), java, List.of(), args, log(nodeRank));
    }

    /** The secret file every node of a test shares. */
    private Path secretFile() {
        Path file = dir.resolve("job.secret");
        if (!Files.exists(file)) {
            JobSecret.generate().writeTo(file);
        }
        return file;
    }

    private Path log(int nodeRank) {
        return dir.resolve("node" + nodeRank + ".out");
    }

    private String output(int nodeRank) throws IOException {
        return Files.readString(log(nodeRank));
    }

    private static int awaitExit(LauncherProcess p, int nodeRank) throws Exception {
        return p.awaitExit(60); // its output names the node (the log's file name) when it fails
    }

    @Test
    void nodesWithTheSameSecretFileJoinAndANodeWithAnotherIsRefusedNamingWhy() throws Exception {
        Path secret = secretFile();
        Path other = dir.resolve("other.secret");
        JobSecret.generate().writeTo(other);
        LauncherProcess n1 = node(NS1, 1, List.of("--secret-file", secret.toString()), "rendezvous", dir.toString());
        LauncherProcess n0 = node(NS0, 0, List.of("--secret-file", secret.toString()), "rendezvous", dir.toString());
        assertThat(awaitExit(n0, 0)).as("node 0 exit; output:\n%s", output(0)).isZero();
        assertThat(awaitExit(n1, 1)).as("node 1 exit; output:\n%s", output(1)).isZero();
        assertThat(output(1)).contains("[rank 2] CONNECTED", "[rank 3] CONNECTED");

        LauncherProcess s0 = node(NS0, 0, List.of("--secret-file", secret.toString()), "rendezvous", dir.toString());
        LauncherProcess s1 = node(NS1, 1, List.of("--secret-file", other.toString()), "rendezvous", dir.toString());
        try {
            assertThat(awaitExit(s1, 1))
                    .as("node 1 exit; output:\n%s", output(1))
                    .isNotZero();
            assertThat(output(1)).contains("failed authentication", "does not know this job's secret");
            assertThat(Processes.awaitText(log(0), "refused a connection from /192.0.2.2", Duration.ofSeconds(20)))
                    .as("node 0 logs the refusal; output:\n%s", output(0))
                    .isTrue();
        } finally {
            s0.process().destroy();
            s0.process().waitFor(20, TimeUnit.SECONDS);
        }
    }

    @Test
    void twoNodesFormOneGroupWithConsistentRanksWithoutASecretWhenToldSo() throws Exception {
        List<String> insecure = List.of("--insecure-no-secret");
        LauncherProcess n1 = node(NS1, 1, insecure, "rendezvous", dir.toString());
        LauncherProcess n0 = node(NS0, 0, insecure, "rendezvous", dir.toString());
        assertThat(awaitExit(n0, 0)).as("node 0 exit; output:\n%s", output(0)).isZero();
        assertThat(awaitExit(n1, 1)).as("node 1 exit; output:\n%s", output(1)).isZero();
        for (int node = 0; node < 2; node++) {
            assertThat(output(node)).contains("WARNING: no job secret (--insecure-no-secret)");
        }

        assertThat(output(0)).contains("[rank 0] RENDEZVOUS 3");
        assertThat(output(1))
                .contains("joining the group at 192.0.2.1:29501", "[rank 2] CONNECTED", "[rank 3] CONNECTED");
        for (int rank = 0; rank < 4; rank++) {
            int node = rank / 2;
            String line = envLine(output(node), rank);
            assertThat(line)
                    .contains(
                            " RANK=" + rank + " ",
                            "WORLD_SIZE=4",
                            "LOCAL_RANK=" + rank % 2,
                            "LOCAL_WORLD_SIZE=2",
                            "GROUP_RANK=" + node,
                            "MASTER_ADDR=" + MASTER,
                            "MASTER_PORT=29500",
                            "COHORT_RUN_ID=multi",
                            "COHORT_RESTART_COUNT=0");
        }
    }

    @Test
    void autoChoosesTheSameBackendOnNodesWithDifferentJdks() throws Exception {
        // Node 1 runs on a JDK without the foreign-memory API: auto must pick gloo on node 0 too,
        // not hier, or the nodes would run different backends.
        String old = javaOfJdk(17, 21);
        String recent = javaOfJdk(22, 999);
        Assumptions.assumeTrue(old != null && recent != null, "needs a JDK 17-21 and a JDK >= 22 under /usr/lib/jvm");
        LauncherProcess n1 = node(NS1, 1, old, 2, List.of(), "auto", dir.toString());
        LauncherProcess n0 = node(NS0, 0, recent, 2, List.of(), "auto", dir.toString());
        assertThat(awaitExit(n0, 0)).as("node 0 exit; output:\n%s", output(0)).isZero();
        assertThat(awaitExit(n1, 1)).as("node 1 exit; output:\n%s", output(1)).isZero();

        // The reason names hier where it is on the class path (a build on JDK >= 22).
        boolean hierHere = Backends.discover().containsKey("hier");
        assertThat(output(0))
                .contains("workers that choose no --distributed-backend, or auto, use gloo ("
                        + (hierHere ? "a node of this job runs its workers on JDK 17" : ""));
        for (int rank = 0; rank < 4; rank++) {
            String out = output(rank / 2);
            assertThat(out).as(out).contains("[rank " + rank + "] AUTO gloo");
            assertThat(envLine(out, rank)).contains("COHORT_OLDEST_JDK=17", "COHORT_BACKEND=auto");
        }
        // Node 0's workers run on JDK 22 or newer and still choose gloo, saying why.
        if (hierHere) {
            assertThat(output(0))
                    .contains(
                            "AUTO gloo (a node of this job runs its workers on JDK 17, which has no "
                                    + "foreign-memory API for shared memory, so every node uses gloo; JDK >= 22 on every node would use hier)");
        }
    }

    @Test
    void nodesWithDifferentNumbersOfWorkersFormOneGroup() throws Exception {
        // As torchrun allows: node 0 runs 2 workers, node 1 one; node 0 numbers the ranks, and
        // auto picks hier on both (JDK >= 22; it learns the number of hosts from GROUP_WORLD_SIZE).
        LauncherProcess n1 = node(NS1, 1, WorkerProgram.javaExecutable(), 1, List.of(), "auto", dir.toString());
        LauncherProcess n0 = node(NS0, 0, WorkerProgram.javaExecutable(), 2, List.of(), "auto", dir.toString());
        assertThat(awaitExit(n0, 0)).as("node 0 exit; output:\n%s", output(0)).isZero();
        assertThat(awaitExit(n1, 1)).as("node 1 exit; output:\n%s", output(1)).isZero();

        assertThat(output(0)).contains("starting 2 worker(s) (ranks 0..1 of 3)");
        assertThat(output(1)).contains("starting 1 worker(s) (ranks 2..2 of 3)");
        int[][] expected = {{0, 0, 0, 2}, {1, 0, 1, 2}, {2, 1, 0, 1}}; // rank, node, local rank, local world
        for (int[] e : expected) {
            String out = output(e[1]);
            assertThat(envLine(out, e[0]))
                    .contains(
                            " RANK=" + e[0] + " ",
                            "WORLD_SIZE=3",
                            "LOCAL_RANK=" + e[2],
                            "LOCAL_WORLD_SIZE=" + e[3],
                            "GROUP_RANK=" + e[1],
                            "GROUP_WORLD_SIZE=2");
            assertThat(out)
                    .contains("[rank " + e[0] + "] AUTO "
                            + (Runtime.version().feature() >= 22
                                    ? "hier (3 workers on 2 hosts: shared memory within each host, Gloo between hosts)"
                                    : "gloo"));
        }
    }

    /** The {@code java} of a JDK under /usr/lib/jvm whose feature version is in [min, max], or null. */
    private static String javaOfJdk(int min, int max) throws IOException {
        Path jvms = Path.of("/usr/lib/jvm");
        if (!Files.isDirectory(jvms)) {
            return null;
        }
        try (var dirs = Files.list(jvms)) {
            for (Path jdk : dirs.sorted().collect(Collectors.toList())) {
                Path release = jdk.resolve("release");
                Path java = jdk.resolve("bin/java");
                if (!Files.isRegularFile(release) || !Files.isExecutable(java)) {
                    continue;
                }
                for (String line : Files.readAllLines(release)) {
                    if (line.startsWith("JAVA_VERSION=")) {
                        int feature =
                                Integer.parseInt(line.replaceAll("[^0-9.]", "").split("\\.")[0]);
                        if (feature >= min && feature <= max) {
                            return java.toString();
                        }
                    }
                }
            }
        }
        return null;
    }

    @Test
    void aFailureOnOneNodeRestartsBothNodes() throws Exception {
        LauncherProcess n0 = node(NS0, 0, List.of("--max-restarts", "1"), "fail-until", dir.toString(), "1", "4", "3");
        LauncherProcess n1 = node(NS1, 1, List.of("--max-restarts", "1"), "fail-until", dir.toString(), "1", "4", "3");
        assertThat(awaitExit(n0, 0)).as("node 0 exit; output:\n%s", output(0)).isZero();
        assertThat(awaitExit(n1, 1)).as("node 1 exit; output:\n%s", output(1)).isZero();

        assertThat(output(1)).contains("rank 3 exited with code 4", "restarting the group: restart 1 of 1");
        assertThat(output(0)).contains("restarting the group: restart 1 of 1");
        for (int rank = 0; rank < 4; rank++) {
            assertThat(envLine(output(rank / 2), rank)).contains("COHORT_RESTART_COUNT=1");
        }
        assertNoneAlive(pids(dir));
    }

    @Test
    void whenOneNodesLauncherIsStoppedTheOtherNodeStopsToo() throws Exception {
        LauncherProcess n0 = node(NS0, 0, List.of(), "sleep", dir.toString());
        LauncherProcess n1 = node(NS1, 1, List.of(), "sleep", dir.toString());
        for (int rank = 0; rank < 4; rank++) {
            awaitPid(dir, rank, 0, 30_000);
        }
        n1.process().destroy();
        assertThat(awaitExit(n1, 1)).isEqualTo(143);
        assertThat(awaitExit(n0, 0)).as("node 0 exit; output:\n%s", output(0)).isEqualTo(1);
        assertThat(output(0)).contains("lost contact with the launcher of node 1");
        assertNoneAlive(pids(dir));
    }

    private static String envLine(String output, int rank) {
        List<String> lines = output.lines()
                .filter(l -> l.startsWith("[rank " + rank + "] ENV"))
                .collect(Collectors.toList());
        assertThat(lines).as("ENV lines of rank %d in:\n%s", rank, output).isNotEmpty();
        return lines.get(lines.size() - 1);
    }
}
