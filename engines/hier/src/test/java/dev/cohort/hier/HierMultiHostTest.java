package dev.cohort.hier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

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
 * 2 hosts x 2 ranks: network namespaces joined by a veth pair, Gloo between the leaders across
 * it, shm within each (the namespaces share /dev/shm; each host's group has its own file).
 */
class HierMultiHostTest {

    @TempDir
    Path tmp;

    /**
     * Runs worker {@code mode} with {@code ranks[k]} ranks on host k (host 0's first), rank 0's
     * store at host 0's address; port {@code portOffset} keeps the tests of one JVM apart.
     */
    private List<Result> runOnTwoHosts(TwoHosts hosts, String run, int portOffset, String mode, int[] ranks) {
        int port = 29_400 + (int) (ProcessHandle.current().pid() % 500) + portOffset;
        int world = ranks[0] + ranks[1];
        return JvmWorkers.run(world,
                r -> hosts.on(r < ranks[0] ? 0 : 1, HierProcessesTest.command(mode)),
                r -> {
                    int host = r < ranks[0] ? 0 : 1;
                    Map<String, String> env = new java.util.HashMap<>(HierProcessesTest.env(run, port, r, world,
                            ranks[host], host, host == 0 ? r : r - ranks[0]));
                    env.put("MASTER_ADDR", TwoHosts.ADDRESS_A);
                    env.put("GROUP_WORLD_SIZE", "2");
                    return env;
                },
                tmp, Duration.ofSeconds(220));
    }

    @Test
    @Timeout(value = 240, unit = TimeUnit.SECONDS)
    void conformanceAcrossTwoNamespacedHosts() {
        String why = TwoHosts.unavailableReason();
        assumeTrue(why == null, () -> "skipped: cannot create network namespaces here: " + why);
        String run = HierProcessesTest.runId("netns");
        try (TwoHosts hosts = TwoHosts.create()) {
            List<Result> results = runOnTwoHosts(hosts, run, 0, "conformance", new int[] {2, 2});
            HierProcessesTest.assertAllOk(results);
            assertThat(results.get(2).output())
                    .contains("TOPOLOGY Topology[rank=2, worldSize=4, localRank=0, localWorldSize=2, nodeRank=1]");
            assertThat(results.get(0).output()).contains("NODE 0 RANKS [0, 1]");
            assertThat(results.get(3).output()).contains("NODE 1 RANKS [2, 3]");
        }
        assertThat(HierProcessesTest.leftovers(run)).isEmpty();
    }

    @Test
    @Timeout(value = 240, unit = TimeUnit.SECONDS)
    void hostsOfTwoRanksAndOneAcrossNamespaces() {
        // Host 0 runs ranks 0 and 1, host 1 rank 2 alone: its shm group has one rank, and the
        // leaders' allgathers carry blocks of different sizes across the veth pair.
        String why = TwoHosts.unavailableReason();
        assumeTrue(why == null, () -> "skipped: cannot create network namespaces here: " + why);
        String run = HierProcessesTest.runId("netns-uneven");
        try (TwoHosts hosts = TwoHosts.create()) {
            List<Result> results = runOnTwoHosts(hosts, run, 1, "conformance-small", new int[] {2, 1});
            HierProcessesTest.assertAllOk(results);
            assertThat(results.get(2).output())
                    .contains("TOPOLOGY Topology[rank=2, worldSize=3, localRank=0, localWorldSize=1, nodeRank=1]")
                    .contains("NODE 1 RANKS [2]");
            assertThat(results.get(0).output()).contains("NODE 0 RANKS [0, 1]");
        }
        assertThat(HierProcessesTest.leftovers(run)).isEmpty();
    }
}
