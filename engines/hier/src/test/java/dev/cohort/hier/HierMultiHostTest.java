package dev.cohort.hier;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.testkit.JvmWorkers;
import dev.cohort.testkit.JvmWorkers.Result;
import dev.cohort.testkit.MpiRun;
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
 * 2 hosts x 2 ranks: network namespaces joined by a veth pair, Gloo (or Cohort's TCP mesh, or Open
 * MPI under mpirun) between the leaders across it, shm within each (the namespaces share /dev/shm; each host's group has its
 * own file).
 */
class HierMultiHostTest {

    @TempDir
    Path tmp;

    /**
     * Runs worker {@code mode} with {@code ranks[k]} ranks on host k (host 0's first) and the
     * hier {@code options}, rank 0's store at host 0's address, and checks that every rank reported OK and that the run left
     * nothing in /dev/shm; {@code what} names the run, and port {@code portOffset} keeps the tests
     * of one JVM apart. Skipped where network namespaces cannot be made.
     */
    private List<Result> runOnTwoHostsAllOk(String what, int portOffset, String mode, int[] ranks, String... options) {
        String run = HierProcessesTest.runId(what);
        int port = TwoHosts.port(29_400) + portOffset;
        int world = ranks[0] + ranks[1];
        List<Result> results;
        try (TwoHosts hosts = TwoHosts.createOrSkip()) {
            results = JvmWorkers.run(
                    world,
                    r -> hosts.on(r < ranks[0] ? 0 : 1, HierProcessesTest.command(mode, options)),
                    r -> {
                        int host = r < ranks[0] ? 0 : 1;
                        Map<String, String> env = new java.util.HashMap<>(HierProcessesTest.env(
                                run, port, r, world, ranks[host], host, host == 0 ? r : r - ranks[0]));
                        env.put("MASTER_ADDR", TwoHosts.ADDRESS_A);
                        env.put("GROUP_WORLD_SIZE", "2");
                        return env;
                    },
                    tmp,
                    Duration.ofSeconds(220));
            HierProcessesTest.assertAllOk(results);
        }
        assertThat(HierProcessesTest.leftovers(run)).isEmpty();
        return results;
    }

    @Test
    @Timeout(value = 240, unit = TimeUnit.SECONDS)
    void conformanceAcrossTwoNamespacedHosts() {
        TwoHosts.assertTwoByTwo(runOnTwoHostsAllOk("netns", 0, "conformance", new int[] {2, 2}));
    }

    @Test
    @Timeout(value = 240, unit = TimeUnit.SECONDS)
    void conformanceAcrossTwoNamespacedHostsWithCohortsTcpMeshBetween() {
        TwoHosts.assertTwoByTwo(
                runOnTwoHostsAllOk("netns-tcp", 2, "conformance", new int[] {2, 2}, "--hier-between", "tcp"));
    }

    @Test
    @Timeout(value = 240, unit = TimeUnit.SECONDS)
    void underMpirunAcrossTwoNamespacedHostsHierRunsOpenMpiBetweenThem() {
        // No rendezvous address, no engine named between hosts: mpirun's job across two hosts.
        MpiRun.Job job = MpiRun.okAcrossTwoNewHosts(
                tmp,
                HierWorker.class,
                List.of("conformance-small", "--distributed-backend", "hier"),
                Duration.ofSeconds(220),
                "BACKEND hier");
        assertThat(job.output()).contains("hier: 2 hosts, shared memory within each, mpi between their leaders");
    }

    @Test
    @Timeout(value = 240, unit = TimeUnit.SECONDS)
    void hostsOfTwoRanksAndOneAcrossNamespaces() {
        // Host 0 runs ranks 0 and 1, host 1 rank 2 alone: its shm group has one rank, and the
        // leaders' allgathers carry blocks of different sizes across the veth pair.
        List<Result> results = runOnTwoHostsAllOk("netns-uneven", 1, "conformance-small", new int[] {2, 1});
        assertThat(results.get(2).output())
                .contains("TOPOLOGY Topology[rank=2, worldSize=3, localRank=0, localWorldSize=1, nodeRank=1]")
                .contains("NODE 1 RANKS [2]");
        assertThat(results.get(0).output()).contains("NODE 0 RANKS [0, 1]");
    }
}
