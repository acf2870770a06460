package dev.cohort.djl;

import dev.cohort.testkit.JvmWorkers;
import dev.cohort.testkit.JvmWorkers.Result;
import dev.cohort.testkit.TwoHosts;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * DJL training across two hosts (network namespaces joined by a veth pair), 2 ranks on each, on
 * the tcp engine and on hier (shm within each host, tcp between them): the same parameters as one
 * process training on the four shards' batches together.
 */
class DjlMultiHostTest {

    @TempDir
    Path tmp;

    /** tcp, and on JDK 22+ hier (shm within each host, tcp between them). */
    static List<String> engines() {
        return Runtime.version().feature() >= 22 ? List.of("tcp", "hier") : List.of("tcp");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("engines")
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void fourRanksOnTwoHostsTrainAsOneProcess(String engine) throws IOException {
        Map<String, String> env = engine.equals("hier")
                ? Map.of("COHORT_RUN_ID", "djl-two-hosts-hier", "COHORT_BACKEND", "hier", "COHORT_HIER_BETWEEN", "tcp")
                : Map.of("COHORT_RUN_ID", "djl-two-hosts");
        try (TwoHosts hosts = TwoHosts.createOrSkip()) {
            int batch = 4;
            int steps = 5;
            Path together = tmp.resolve("together.txt");
            List<String> args =
                    List.of("loop", Integer.toString(batch), Integer.toString(steps), "1", together.toString());
            List<Result> results = hosts.runTwoByTwo(
                    JvmWorkers.javaCommand(DjlWorker.class, List.of("-Dai.djl.offline=true"), args),
                    TwoHosts.port(engine.equals("hier") ? 30_420 : 30_400),
                    env,
                    tmp.resolve("hosts"),
                    Duration.ofSeconds(240));
            JvmWorkers.assertAllOk(results);

            Path alone = tmp.resolve("alone.txt");
            int alonePort = JvmWorkers.freePort();
            List<Result> reference = JvmWorkers.run(
                    1,
                    r -> JvmWorkers.javaCommand(
                            DjlWorker.class,
                            List.of("-Dai.djl.offline=true"),
                            List.of(
                                    "loop",
                                    Integer.toString(4 * batch),
                                    Integer.toString(steps),
                                    "1",
                                    alone.toString())),
                    r -> Map.of(
                            "MASTER_ADDR",
                            "127.0.0.1",
                            "MASTER_PORT",
                            Integer.toString(alonePort),
                            "RANK",
                            "0",
                            "WORLD_SIZE",
                            "1"),
                    tmp.resolve("alone"),
                    Duration.ofSeconds(120));
            JvmWorkers.assertAllOk(reference);
            DjlRuns.assertClose(DjlRuns.read(together), DjlRuns.read(alone));
        }
    }
}
