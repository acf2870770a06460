package dev.cohort.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.cohort.runtime.auth.JobSecret;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** The benchmarks' --nnodes options: checked together, and a benchmark run as two nodes. */
class NodesTest {

    private static Nodes parse(String... args) {
        CollectivesBenchmark b = new CollectivesBenchmark();
        new CommandLine(b).parseArgs(args);
        return b.nodes;
    }

    @Test
    void oneNodeRunsEveryRankHere() {
        assertThat(parse().workersHere(3)).isEqualTo(3);
        assertThat(parse().reports()).isTrue();
    }

    @Test
    void severalNodesSplitTheWorldAndOnlyNodeZeroReports() {
        Nodes second =
                parse("--nnodes", "2", "--node-rank", "1", "--master-addr", "10.0.0.1", "--master-port", "29400");
        assertThat(second.workersHere(4)).isEqualTo(2);
        assertThat(second.reports()).isFalse();
    }

    @Test
    void badCombinationsSayWhatToChange() {
        assertThatThrownBy(() -> parse("--nnodes", "2", "--master-addr", "a", "--master-port", "1")
                        .workersHere(3))
                .hasMessageContaining("--world 3 does not split evenly over --nnodes 2");
        assertThatThrownBy(() -> parse("--nnodes", "2").workersHere(4))
                .hasMessageContaining("needs --master-addr and --master-port");
        assertThatThrownBy(() -> parse("--nnodes", "2", "--node-rank", "2").workersHere(4))
                .hasMessageContaining("--node-rank must be in [0, --nnodes)");
    }

    /** Across hosts a benchmark proves a shared secret as {@code cohort run} does, or is told not to. */
    @Test
    void severalNodesNeedASecretOrTheExplicitOptOut(@TempDir Path dir) {
        List<String> twoNodes = List.of("--nnodes", "2", "--master-addr", "10.0.0.1", "--master-port", "29400");
        assertThatThrownBy(() -> parse(twoNodes.toArray(String[]::new)).launchOptions(2))
                .hasMessageContaining("a run over 2 nodes needs a job secret that every node shares")
                .hasMessageContaining("--secret-file");
        Path secret = dir.resolve("job.secret");
        JobSecret.generate().writeTo(secret);
        List<String> withSecret = new ArrayList<>(twoNodes);
        withSecret.addAll(List.of("--secret-file", secret.toString()));
        assertThat(parse(withSecret.toArray(String[]::new))
                        .launchOptions(2)
                        .build()
                        .secret()
                        .map(JobSecret::text))
                .contains(JobSecret.read(secret).text());
        List<String> optOut = new ArrayList<>(twoNodes);
        optOut.add("--insecure-no-secret");
        assertThat(parse(optOut.toArray(String[]::new)).launchOptions(2).build().secret())
                .isEmpty();
    }

    /**
     * Two launcher processes on loopback as nodes 0 and 1 of one gloo job, as on two hosts: one
     * result, written by node 0, for a world of 2.
     */
    @Test
    @Timeout(240)
    void aBenchmarkRunsAsTwoNodes(@TempDir Path dir) throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        Path json = dir.resolve("two-nodes.json");
        Path secret = dir.resolve("job.secret");
        JobSecret.generate().writeTo(secret);
        List<String> common = List.of(BenchJvm.words(
                "train --backend gloo --world 2 --steps 3 --warm 1 --batch 8 --nnodes 2 "
                        + "--master-addr 127.0.0.1 --secret-file",
                secret.toString(),
                "--master-port",
                Integer.toString(port)));
        Process node1 = start(dir.resolve("node1.log"), common, "--node-rank", "1");
        Process node0 = start(dir.resolve("node0.log"), common, "--node-rank", "0", "--json", json.toString());
        try {
            assertThat(node0.waitFor(200, TimeUnit.SECONDS))
                    .as("node 0 finished")
                    .isTrue();
            assertThat(node1.waitFor(30, TimeUnit.SECONDS))
                    .as("node 1 finished")
                    .isTrue();
            assertThat(node0.exitValue())
                    .as(Files.readString(dir.resolve("node0.log")))
                    .isZero();
            assertThat(node1.exitValue())
                    .as(Files.readString(dir.resolve("node1.log")))
                    .isZero();
        } finally {
            node0.destroyForcibly();
            node1.destroyForcibly();
        }
        JsonNode result = new ObjectMapper().readTree(Files.readString(json));
        assertThat(result.get("world").asInt()).isEqualTo(2);
        assertThat(result.get("steps").asInt()).isEqualTo(3);
        assertThat(result.get("samples_per_s").asDouble()).isPositive();
        assertThat(result.get("cpu_ms_per_step").asDouble())
                .as("both ranks' CPU time per step")
                .isPositive();
        assertThat(result.get("memory").get("peak_rss_bytes")).hasSize(2);
        assertThat(Files.readString(dir.resolve("node0.log")))
                .contains("world=2")
                .contains("ms/step (all ranks)");
        assertThat(Files.readString(dir.resolve("node1.log"))).doesNotContain("samples/s=");
    }

    private static Process start(Path log, List<String> common, String... more) throws java.io.IOException {
        List<String> args = new ArrayList<>(common);
        args.addAll(List.of(more));
        return BenchJvm.start(log, args);
    }
}
