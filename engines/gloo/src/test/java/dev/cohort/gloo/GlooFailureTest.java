package dev.cohort.gloo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.testkit.JvmWorkers;
import dev.cohort.testkit.JvmWorkers.Result;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Timeouts and lost peers on Gloo fail in time, with errors naming rank, operation and peer. */
class GlooFailureTest {

    @TempDir
    Path tmp;

    /**
     * Runs {@code processes} fault workers in {@code mode} for at most {@code seconds}, process r
     * with the launch environment {@code env.apply(r)}.
     */
    private List<Result> faultWorkers(int processes, String mode, IntFunction<Map<String, String>> env, int seconds) {
        return JvmWorkers.run(
                processes,
                r -> JvmWorkers.javaCommand(GlooFaultWorker.class, List.of(), List.of(mode)),
                env,
                tmp,
                Duration.ofSeconds(seconds));
    }

    /** The two ranks of a world of two on a fresh port, rank 1 misbehaving as {@code mode} says, within 60 s. */
    private List<Result> twoRanks(String mode) {
        int port = JvmWorkers.freePort();
        return faultWorkers(2, mode, r -> GlooProcessesTest.env(r, 2, port, 2), 60);
    }

    /**
     * Rank {@code rank} of a world of two started alone, its store at {@code port}, within 40 s: its
     * output, once it is checked that it exited with 4 (it could not connect).
     */
    private String aloneFailingToConnect(int rank, int port) {
        List<Result> results = faultWorkers(1, "absent", r -> GlooProcessesTest.env(rank, 2, port, 2), 40);
        assertThat(results.get(0).exitCode()).as(JvmWorkers.describe(results)).isEqualTo(4);
        return results.get(0).output();
    }

    /**
     * A launch environment of the store's address (127.0.0.1:{@code port}) and {@code more} (name,
     * value, name, value...) alone: for the tests of launches that are wrong.
     */
    private static Map<String, String> storeAnd(int port, String... more) {
        Map<String, String> env =
                new HashMap<>(Map.of("MASTER_ADDR", "127.0.0.1", "MASTER_PORT", Integer.toString(port)));
        for (int i = 0; i < more.length; i += 2) {
            env.put(more[i], more[i + 1]);
        }
        return env;
    }

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void aRankThatStopsCallingCollectivesTimesOutTheOthers() {
        String out = JvmWorkers.failedAsExpected(twoRanks("absent"), 0);
        assertThat(out)
                .contains("CollectiveTimeoutException")
                .contains("gloo world rank 0 of 2: allreduce #3 (float32[1024] SUM)");
        assertThat(JvmWorkers.failedAfter(out)).isBetween(2.5, 6.0); // timeout 3 s, failure within 2x
    }

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void aRankThatDiesIsNamedByTheOthers() {
        List<Result> results = twoRanks("die");
        assertThat(results.get(1).exitCode()).isEqualTo(9);
        String out = JvmWorkers.failedAsExpected(results, 0);
        assertThat(out).contains("allreduce #3").contains("lost peer 127.0.0.1 (rank(s) 1)");
        assertThat(JvmWorkers.failedAfter(out)).isLessThan(6.0);
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aMissingRankFailsTheConnectWithinItsTimeout() {
        int port = JvmWorkers.freePort();
        long start = System.nanoTime();
        assertThat(aloneFailingToConnect(0, port))
                .contains("CONNECT FAILED rank 0 of 2")
                .contains("127.0.0.1:" + port);
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(30));
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void ranksThatDisagreeOnTheWorldSizeAreToldSo() {
        int port = JvmWorkers.freePort();
        List<Result> results = faultWorkers(
                2, "absent", r -> storeAnd(port, "RANK", Integer.toString(r), "WORLD_SIZE", r == 0 ? "2" : "3"), 40);
        // Rank 1 finds the difference in rank 0's job and says so; rank 0, waiting for rank 1's
        // record, gives up at once with rank 1's message.
        for (Result r : results) {
            assertThat(r.exitCode()).as(JvmWorkers.describe(results)).isEqualTo(4);
            assertThat(r.output())
                    .as(JvmWorkers.describe(results))
                    .contains("rank 1 of 3: rank 0 was started with WORLD_SIZE=2 but this rank with WORLD_SIZE=3");
        }
        assertThat(results.get(0).output())
                .contains("rank 0 of 2: gave up meeting at TCP store at 127.0.0.1:" + port
                        + " because another process did");
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void twoProcessesWithTheSameRankAreToldSo() {
        int port = JvmWorkers.freePort();
        List<Result> results =
                faultWorkers(3, "absent", r -> storeAnd(port, "RANK", r == 0 ? "0" : "1", "WORLD_SIZE", "2"), 40);
        assertThat(results.get(1).output() + results.get(2).output())
                .as(JvmWorkers.describe(results))
                .contains("another process already joined run 'cohort/0' as RANK=1");
    }

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void aStoppedRankIsReportedAsAStallThenFailsAtTheTimeout() {
        String out = JvmWorkers.failedAsExpected(twoRanks("stop"), 0);
        assertThat(out).contains("allreduce #3 (float32[1024] SUM) has waited 2 s; rank(s) [1] have not issued it yet");
        assertThat(out).contains("CollectiveTimeoutException");
        assertThat(JvmWorkers.failedAfter(out))
                .isBetween(5.5, 12.0); // stall reported at 2 s, failure at the 6 s timeout
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aTakenMasterPortIsNamedAtOnce() throws Exception {
        int port = JvmWorkers.freePort();
        try (java.net.ServerSocket taken =
                new java.net.ServerSocket(port, 1, java.net.InetAddress.getLoopbackAddress())) {
            assertThat(aloneFailingToConnect(0, port))
                    .contains("cannot host the TCP store on 127.0.0.1:" + port)
                    .contains("MASTER_PORT taken");
        }
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void anUnreachableMasterIsNamedWithinTheConnectTimeout() {
        int port = JvmWorkers.freePort();
        assertThat(aloneFailingToConnect(1, port))
                .contains("CONNECT FAILED rank 1 of 2: could not reach the TCP store at 127.0.0.1:" + port);
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void ranksOfDifferentRunsAreToldSo() {
        int port = JvmWorkers.freePort();
        List<Result> results = faultWorkers(
                2,
                "absent",
                r -> storeAnd(
                        port,
                        "RANK",
                        Integer.toString(r),
                        "WORLD_SIZE",
                        "2",
                        "COHORT_RUN_ID",
                        r == 0 ? "job-a" : "job-b"),
                40);
        assertThat(results.get(0).output() + results.get(1).output())
                .as(JvmWorkers.describe(results))
                .contains("belongs to run")
                .contains("job-a")
                .contains("job-b");
    }
}
