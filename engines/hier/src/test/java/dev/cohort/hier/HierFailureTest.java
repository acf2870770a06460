package dev.cohort.hier;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.testkit.JvmWorkers;
import dev.cohort.testkit.JvmWorkers.Result;
import dev.cohort.testkit.MpiRun;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A rank SIGKILLed while every rank runs allreduces (2 hosts x 2 ranks on this machine, timeout
 * 10 s): the others fail well before the timeout, each naming the lost rank or, on the other host,
 * the leader that lost it; nothing is left in /dev/shm.
 */
class HierFailureTest {

    private static final double TIMEOUT_SECONDS = 10;

    @TempDir
    Path tmp;

    /** Runs the 2x2 job of allreduces in which rank {@code victim} is SIGKILLed a second after its third. */
    private List<Result> killDuringCalls(String run, int victim) throws InterruptedException {
        return killDuringCalls(run, "victim:" + victim, victim);
    }

    /** The same, with the worker mode {@code mode} (see {@link HierWorker}) and the hier {@code options}. */
    private List<Result> killDuringCalls(String run, String mode, int victim, String... options)
            throws InterruptedException {
        int port = JvmWorkers.freePort();
        Thread killer = JvmWorkers.killWhenLogged(
                tmp.resolve("rank-" + victim + ".log"), "VICTIM", Duration.ofSeconds(1), Duration.ofMillis(50L * 1200));
        List<Result> results = JvmWorkers.run(
                4,
                r -> HierProcessesTest.command(mode, withTimeout(options)),
                r -> HierProcessesTest.env(run, port, r, 4, 2, r / 2, r % 2),
                tmp,
                Duration.ofSeconds(100));
        killer.join();
        assertThat(results.get(victim).exitCode())
                .as(JvmWorkers.describe(results))
                .isEqualTo(137);
        for (Result r : results) {
            if (r.rank() != victim) {
                assertThat(r.exitCode()).as(JvmWorkers.describe(results)).isEqualTo(3);
                assertThat(JvmWorkers.failedAfter(r.output()))
                        .as(JvmWorkers.describe(results))
                        .isLessThan(TIMEOUT_SECONDS);
            }
        }
        assertThat(HierProcessesTest.leftovers(run)).isEmpty();
        return results;
    }

    private static String[] withTimeout(String... options) {
        List<String> all = new java.util.ArrayList<>(List.of(options));
        all.addAll(List.of("--hier-timeout", Double.toString(TIMEOUT_SECONDS)));
        return all.toArray(String[]::new);
    }

    @Test
    @Timeout(value = 150, unit = TimeUnit.SECONDS)
    void aKilledLeaderIsNamedOnBothHosts() throws Exception {
        // Rank 2 leads host 1: rank 3 loses it within the host, rank 0 between hosts, and rank 1
        // hears it from its leader, rank 0.
        List<Result> results = killDuringCalls(HierProcessesTest.runId("kill-leader"), 2);
        assertSays(
                results,
                3,
                "hier rank 3 of 4 (host 1, local rank 1)",
                "within host 1 (shm)",
                "lost peer rank 0 (global rank 2)");
        assertSays(
                results,
                0,
                "hier rank 0 of 4 (host 0, local rank 0)",
                "between hosts",
                "global rank 2 (leader of host 1)");
        assertSays(
                results,
                1,
                "hier rank 1 of 4 (host 0, local rank 1)",
                "on this host's leader (global rank 0)",
                "global rank 2 (leader of host 1)");
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void aRankThatStopsCallingCollectivesTimesOutItsHostAndTheOthersFollow() {
        // Rank 3 stops after three allreduces: rank 2 waits for it within host 1 until the 4 s
        // timeout, then leaves the leaders' group, so host 0 fails at once, naming host 1's leader.
        String run = HierProcessesTest.runId("absent");
        int port = JvmWorkers.freePort();
        List<Result> results = JvmWorkers.run(
                4,
                r -> HierProcessesTest.command("absent:3", "--hier-timeout", "4"),
                r -> HierProcessesTest.env(run, port, r, 4, 2, r / 2, r % 2),
                tmp,
                Duration.ofSeconds(100));
        String all = JvmWorkers.describe(results);
        assertSays(
                results,
                2,
                "CollectiveTimeoutException",
                "within host 1 (shm)",
                "waiting for rank(s) [1] (global rank 3)");
        assertThat(JvmWorkers.failedAfter(results.get(2).output())).as(all).isBetween(3.9, 6.0);
        assertSays(results, 0, "between hosts", "leader of host 1");
        assertSays(results, 1, "on this host's leader (global rank 0)");
        for (int r = 0; r < 3; r++) {
            assertThat(results.get(r).exitCode()).as(all).isEqualTo(3);
            // The timeout, plus at most twice the verdict's grace for ranks that wait on their leader.
            assertThat(JvmWorkers.failedAfter(results.get(r).output())).as(all).isLessThan(4 + 2 * 2 + 1.0);
        }
        assertThat(results.get(3).output()).as(all).doesNotContain("FAILED");
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void withMpiBetweenHostsARankThatStopsCallingCollectivesIsNamedAndTheJobAborted() {
        // Under mpirun, hosts of 2 ranks: rank 2 times out within host 1 naming rank 3, and since
        // MPI cannot leave a group whose peers may wait in it, the job is aborted with that reason
        // (logged by the engine's thread at the failure, or at the latest when the worker closes the
        // backend: a worker that halts at once may end before the first, and mpirun ends the job then).
        long start = System.nanoTime();
        MpiRun.Job job = MpiRun.run(
                tmp,
                4,
                HierWorker.class,
                List.of(
                        "absent-then-close:3",
                        "--distributed-backend",
                        "hier",
                        "--hier-between",
                        "mpi",
                        "--hier-ranks-per-host",
                        "2",
                        "--hier-timeout",
                        "4"),
                Duration.ofSeconds(100));
        assertThat(job.exitCode()).as(job.output()).isNotZero();
        assertThat(job.output())
                .containsPattern("hier rank 2 of 4 \\(host 1, local rank 0\\).*within host 1 \\(shm\\).*"
                        + "waiting for rank\\(s\\) \\[1\\] \\(global rank 3\\).*aborting the MPI job");
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(40));
    }

    @Test
    @Timeout(value = 150, unit = TimeUnit.SECONDS)
    void aKilledRankIsNamedByItsHostAndTheOtherHostFailsInTime() throws Exception {
        // Rank 3 is not a leader: its host names it, and its leader leaves a note in the store
        // naming it for host 0, which sees only host 1's leader go away.
        assertHost1LostRank3(killDuringCalls(HierProcessesTest.runId("kill-local"), 3));
    }

    @Test
    @Timeout(value = 150, unit = TimeUnit.SECONDS)
    void withTcpBetweenHostsAKilledRankIsNamedByItsHostAndTheOtherHostFailsInTime() throws Exception {
        // As above, with the leaders on Cohort's TCP mesh: host 1's leader leaves its note in the
        // tcp engine's store (hosted by rank 0), which host 0 reads when the leader leaves.
        List<Result> results =
                killDuringCalls(HierProcessesTest.runId("kill-local-tcp"), "victim:3", 3, "--hier-between", "tcp");
        assertHost1LostRank3(results);
        assertSays(results, 0, "between hosts (tcp among the hosts' leaders)");
    }

    @Test
    @Timeout(value = 150, unit = TimeUnit.SECONDS)
    void aKilledLeaderIsNamedOnBothHostsWithTcpBetweenHosts() throws Exception {
        // Rank 2 leads host 1: host 0's leader loses its tcp peer, named by its global rank.
        List<Result> results =
                killDuringCalls(HierProcessesTest.runId("kill-leader-tcp"), "victim:2", 2, "--hier-between", "tcp");
        assertSays(results, 3, "within host 1 (shm)", "lost peer rank 0 (global rank 2)");
        assertSays(results, 0, "between hosts (tcp among the hosts' leaders)", "global rank 2 (leader of host 1)");
        assertSays(results, 1, "on this host's leader (global rank 0)", "global rank 2 (leader of host 1)");
    }

    @Test
    @Timeout(value = 150, unit = TimeUnit.SECONDS)
    void aRankKilledWhileItsLeaderWorksBetweenHostsIsNamedOnTheOtherHost() throws Exception {
        // Broadcasts from rank 0: host 0 comes 3 s late to the fourth, and rank 3 is killed before
        // it, while host 1's leader waits between hosts. The leader succeeds there and finds rank 3
        // gone only when it relays its verdict; host 0 has moved on to the next broadcast by then and
        // sees only the leader leave, so the leader's note must reach it.
        List<Result> results = killDuringCalls(HierProcessesTest.runId("kill-relay"), "late-broadcasts:3", 3);
        assertHost1LostRank3(results);
        assertSays(results, 2, "waiting for its leader's verdict");
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void hostsThatRunDifferentBackendsAreToldAtOnce() {
        int glooHost = 1; // rank 0 (the store's host) runs hier, host 1's ranks gloo
        // As when `auto` meets a host with JDK 17 (gloo) and one with JDK 25 (hier): every rank
        // fails naming both backends, long before the 60 s connect timeout.
        String run = HierProcessesTest.runId("mixed");
        int port = JvmWorkers.freePort();
        long start = System.nanoTime();
        List<Result> results = JvmWorkers.run(
                4,
                r -> r / 2 == glooHost
                        ? JvmWorkers.javaCommand(
                                HierWorker.class,
                                HierProcessesTest.JVM_ARGS,
                                List.of("conformance-small", "--distributed-backend", "gloo"))
                        : HierProcessesTest.command("conformance-small"),
                r -> HierProcessesTest.env(run, port, r, 4, 2, r / 2, r % 2),
                tmp,
                Duration.ofSeconds(100));
        double seconds = (System.nanoTime() - start) / 1e9;
        String all = JvmWorkers.describe(results);
        for (Result r : results) {
            assertThat(r.exitCode()).as(all).isNotZero();
            assertThat(r.output())
                    .as(all)
                    .contains("every process of a job must run the same backend")
                    .contains("runs the gloo backend (4 ranks)")
                    .contains("the hier backend's group of host leaders (2 ranks)");
        }
        assertThat(seconds).as(all).isLessThan(40);
        assertThat(HierProcessesTest.leftovers(run)).isEmpty();
    }

    private static void assertHost1LostRank3(List<Result> results) {
        assertSays(results, 2, "within host 1 (shm)", "lost peer rank 1 (global rank 3)");
        for (int r = 0; r < 2; r++) {
            assertSays(
                    results,
                    r,
                    "between hosts",
                    "leader of host 1",
                    "the leader of host 1 had failed within its host",
                    "lost peer rank 1 (global rank 3)");
        }
    }

    /** Rank {@code rank}'s output says each of {@code parts} (every rank's output shown when not). */
    private static void assertSays(List<Result> results, int rank, String... parts) {
        assertThat(results.get(rank).output()).as(JvmWorkers.describe(results)).contains(parts);
    }
}
