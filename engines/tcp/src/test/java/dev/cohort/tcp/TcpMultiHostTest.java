package dev.cohort.tcp;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.testkit.EngineWorker;
import dev.cohort.testkit.JvmWorkers;
import dev.cohort.testkit.JvmWorkers.Result;
import dev.cohort.testkit.TwoHosts;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * 2 hosts x 2 ranks: network namespaces joined by a veth pair, the tcp engine across them. (The
 * namespaces share this machine's host name and {@code /dev/shm}, so the launcher gives the layout,
 * as ./cohort run and torchrun do.)
 */
class TcpMultiHostTest {

    @TempDir
    Path tmp;

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void collectivesAcrossTwoHosts() {
        try (TwoHosts hosts = TwoHosts.createOrSkip()) {
            int port = 29_900 + (int) (ProcessHandle.current().pid() % 500);
            List<String> args = List.of("conformance-small", "--distributed-backend", "tcp", "--tcp-timeout", "60");
            List<Result> results = JvmWorkers.run(
                    4,
                    r -> hosts.on(r / 2, JvmWorkers.javaCommand(EngineWorker.class, List.of(), args)),
                    r -> Map.of(
                            "MASTER_ADDR",
                            TwoHosts.ADDRESS_A,
                            "MASTER_PORT",
                            Integer.toString(port),
                            "RANK",
                            Integer.toString(r),
                            "WORLD_SIZE",
                            "4",
                            "LOCAL_RANK",
                            Integer.toString(r % 2),
                            "LOCAL_WORLD_SIZE",
                            "2",
                            "GROUP_RANK",
                            Integer.toString(r / 2)),
                    tmp,
                    Duration.ofSeconds(160));
            JvmWorkers.assertAllOk(results, "BACKEND tcp");
            assertThat(results.get(2).output())
                    .as(JvmWorkers.describe(results))
                    .contains("TOPOLOGY Topology[rank=2, worldSize=4, localRank=0, localWorldSize=2, nodeRank=1]");
            assertThat(results.get(0).output()).contains("NODE 0 RANKS [0, 1]");
            assertThat(results.get(3).output()).contains("NODE 1 RANKS [2, 3]");
        }
    }
}
