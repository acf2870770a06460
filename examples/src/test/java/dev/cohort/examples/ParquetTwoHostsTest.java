package dev.cohort.examples;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.cohort.data.Convert;
import dev.cohort.data.HdfsServer;
import dev.cohort.testkit.JvmWorkers;
import dev.cohort.testkit.TwoHosts;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a user with Parquet files on HDFS runs: the demo trainer, once with each framework, as two
 * ranks on two hosts (network namespaces: rank 0 on A, rank 1 on B, the tcp engine), reading their
 * shares of Fashion-MNIST's test split over {@code hdfs://} from a real HDFS (NameNode and
 * DataNodes in a process on host A). The cluster's client settings reach the workers as a user's
 * would: a {@code hdfs-site.xml} in {@code HADOOP_CONF_DIR}. Skipped where namespaces cannot be made.
 */
// Above the sum of the deadlines below (60 + 2 x 120 s), so that they, which kill what they wait for, come first.
@Timeout(value = 330, unit = TimeUnit.SECONDS)
class ParquetTwoHostsTest {

    private static final int EXAMPLES = 10_000;

    @TempDir
    Path dir;

    @Test
    void torchAndDjlTrainOnTwoHostsFromParquetOnHdfs() throws Exception {
        RealData.assumeInstalled();
        Path shards = dir.resolve("t10k");
        Convert.idx(
                RealData.DIR.resolve("t10k-images-idx3-ubyte.gz"),
                RealData.DIR.resolve("t10k-labels-idx1-ubyte.gz"),
                shards.toString(),
                500,
                5_000);
        Path conf = Files.createDirectories(dir.resolve("hadoop-conf"));
        StringBuilder site = new StringBuilder("<?xml version=\"1.0\"?>\n<configuration>\n");
        HdfsServer.CLIENT_CONF.forEach((name, value) -> site.append("  <property><name>")
                .append(name)
                .append("</name><value>")
                .append(value)
                .append("</value></property>\n"));
        Files.writeString(conf.resolve("hdfs-site.xml"), site.append("</configuration>\n"));

        try (TwoHosts hosts = TwoHosts.createOrSkip();
                HdfsServer.Running hdfs = HdfsServer.Running.onHostA(hosts, dir.resolve("hdfs"), 0, shards)) {
            String root = hdfs.awaitReady(Duration.ofSeconds(60));
            assertThat(root).startsWith("hdfs://" + TwoHosts.ADDRESS_A + ":");
            int port = 31_000;
            for (String framework : List.of("torch", "djl")) {
                Path json = dir.resolve(framework + ".json");
                List<String> args = List.of(
                        "--framework",
                        framework,
                        "--distributed-backend",
                        "tcp",
                        "--data",
                        root,
                        "--epochs",
                        "1",
                        "--json",
                        json.toString());
                int master = TwoHosts.port(port);
                port += 600;
                List<JvmWorkers.Result> results = JvmWorkers.run(
                        2,
                        r -> hosts.on(r, JvmWorkers.javaCommand(FashionMnistTrainer.class, List.of(), args)),
                        r -> {
                            Map<String, String> env = JvmWorkers.launchEnv(TwoHosts.ADDRESS_A, master, r, 2);
                            env.put("HADOOP_CONF_DIR", conf.toString());
                            return env;
                        },
                        dir.resolve("logs-" + framework),
                        Duration.ofSeconds(120));
                for (JvmWorkers.Result r : results) {
                    assertThat(r.exitCode()).as(JvmWorkers.describe(results)).isZero();
                }
                JsonNode summary = new ObjectMapper().readTree(json.toFile());
                String all = framework + ": " + summary + "\n" + JvmWorkers.describe(results);
                assertThat(summary.get("framework").asText()).as(all).isEqualTo(framework);
                assertThat(summary.get("workers").asInt()).as(all).isEqualTo(2);
                // Each rank's share of the 20 row groups, every example once: 10,000 in 79 steps of 2 x 64.
                assertThat(summary.get("epochs_detail").get(0).get("examples").asLong())
                        .as(all)
                        .isEqualTo(EXAMPLES);
                assertThat(summary.get("steps").asLong()).as(all).isEqualTo((EXAMPLES + 127) / 128);
                assertThat(summary.get("test_accuracy").asDouble()).as(all).isGreaterThan(0.7);
            }
        }
    }
}
