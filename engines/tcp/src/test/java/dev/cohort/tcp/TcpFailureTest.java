package dev.cohort.tcp;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.testkit.JvmWorkers;
import dev.cohort.testkit.JvmWorkers.Result;
import java.net.ServerSocket;
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

/** Timeouts, lost peers and wrong launches on tcp fail in time, with errors naming rank, operation and peer. */
class TcpFailureTest {

    @TempDir
    Path tmp;

    private List<Result> faultWorkers(int processes, String mode, IntFunction<Map<String, String>> env, int seconds) {
        return JvmWorkers.run(
                processes,
                r -> JvmWorkers.javaCommand(TcpFaultWorker.class, List.of(), List.of(mode)),
                env,
                tmp,
                Duration.ofSeconds(seconds));
    }

    /** The store's address (127.0.0.1:{@code port}) and {@code more} (name, value, ...). */
    private static Map<String, String> storeAnd(int port, String... more) {
        Map<String, String> env =
                new HashMap<>(Map.of("MASTER_ADDR", "127.0.0.1", "MASTER_PORT", Integer.toString(port)));
        for (int i = 0; i < more.length; i += 2) {
            env.put(more[i], more[i + 1]);
        }
        return env;
    }

    private List<Result> twoRanks(String mode) {
        int port = JvmWorkers.freePort();
        return faultWorkers(2, mode, r -> storeAnd(port, "RANK", Integer.toString(r), "WORLD_SIZE", "2"), 60);
    }

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void aRankThatStopsCallingCollectivesTimesOutTheOthers() {
        String out = JvmWorkers.failedAsExpected(twoRanks("absent"), 0);
        assertThat(out)
                .contains("CollectiveTimeoutException")
                .contains("tcp world rank 0 of 2: allreduce #3 (float32[1024] SUM)")
                .contains("rank(s) [1] have not issued it yet");
        assertThat(JvmWorkers.failedAfter(out)).isBetween(2.5, 6.0); // timeout 3 s, failure within 2x
    }

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void aRankThatDiesIsNamedByTheOthers() {
        List<Result> results = twoRanks("die");
        assertThat(results.get(1).exitCode()).isEqualTo(9);
        String out = JvmWorkers.failedAsExpected(results, 0);
        assertThat(out).contains("allreduce #3").contains("lost peer 127.0.0.1 (rank(s) 1)");
        assertThat(JvmWorkers.failedAfter(out)).isLessThan(2.0);
    }

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void aStoppedRankIsReportedAsAStallThenFailsAtTheTimeout() {
        String out = JvmWorkers.failedAsExpected(twoRanks("stop"), 0);
        assertThat(out).contains("allreduce #3 (float32[1024] SUM) has waited 2 s; rank(s) [1] have not issued it yet");
        assertThat(out).contains("CollectiveTimeoutException");
        assertThat(JvmWorkers.failedAfter(out)).isBetween(5.5, 12.0);
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aMissingRankFailsTheJoinWithinItsTimeoutNamingIt() {
        int port = JvmWorkers.freePort();
        List<Result> results = faultWorkers(1, "absent", r -> storeAnd(port, "RANK", "0", "WORLD_SIZE", "2"), 40);
        assertThat(results.get(0).exitCode()).as(JvmWorkers.describe(results)).isEqualTo(4);
        assertThat(results.get(0).output()).contains("CONNECT FAILED tcp rank 0 of 2: rank(s) [1] did not join");
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void anUnreachableStoreIsNamedWithinTheConnectTimeout() {
        int port = JvmWorkers.freePort();
        List<Result> results = faultWorkers(1, "absent", r -> storeAnd(port, "RANK", "1", "WORLD_SIZE", "2"), 40);
        assertThat(results.get(0).exitCode()).as(JvmWorkers.describe(results)).isEqualTo(4);
        assertThat(results.get(0).output())
                .contains("CONNECT FAILED tcp rank 1 of 2")
                .contains("the job's store at 127.0.0.1:" + port + " did not answer in time");
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void ranksThatDisagreeOnTheWorldSizeAreBothToldAtOnce() {
        int port = JvmWorkers.freePort();
        long start = System.nanoTime();
        List<Result> results = faultWorkers(
                2, "absent", r -> storeAnd(port, "RANK", Integer.toString(r), "WORLD_SIZE", r == 0 ? "2" : "3"), 40);
        for (Result r : results) {
            assertThat(r.exitCode()).as(JvmWorkers.describe(results)).isEqualTo(4);
            assertThat(r.output())
                    .as(JvmWorkers.describe(results))
                    .contains("WORLD_SIZE=")
                    .contains("start every rank with the same");
        }
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5 + 10));
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void twoProcessesWithTheSameRankAreToldSo() {
        int port = JvmWorkers.freePort();
        List<Result> results =
                faultWorkers(3, "absent", r -> storeAnd(port, "RANK", r == 0 ? "0" : "1", "WORLD_SIZE", "2"), 40);
        assertThat(results.get(1).output() + results.get(2).output())
                .as(JvmWorkers.describe(results))
                .contains("another process already joined as rank 1");
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
        assertThat(results.get(1).output())
                .as(JvmWorkers.describe(results))
                .contains("belongs to run 'cohort/job-a/0/'")
                .contains("this rank is of run 'cohort/job-b/0/'");
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aTakenMasterPortIsNamedAtOnce() throws Exception {
        try (ServerSocket taken = new ServerSocket(0)) {
            int port = taken.getLocalPort();
            List<Result> results = faultWorkers(1, "absent", r -> storeAnd(port, "RANK", "0", "WORLD_SIZE", "2"), 40);
            assertThat(results.get(0).output())
                    .as(JvmWorkers.describe(results))
                    .contains("CONNECT FAILED")
                    .contains("cannot serve the job's store on 127.0.0.1:" + port)
                    .contains("Choose another MASTER_PORT");
        }
    }
}
