package dev.cohort.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.testkit.JvmWorkers.Result;
import java.net.InetAddress;
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

/**
 * Timeouts, lost peers and wrong launches fail in time, with errors naming rank, operation and
 * peer: the same cases for every engine that meets at {@code MASTER_ADDR:MASTER_PORT}, each rank a
 * {@link FaultWorker} process. Bounds are the liveness kind only ("fails within twice its
 * timeout"); that a failure came from the timeout and not earlier is shown by its message.
 */
public abstract class EngineFailureSuite {

    @TempDir
    protected Path tmp;

    private final String engine;
    private final double lostPeerSeconds;
    private final IntFunction<List<String>> unreachableStoreSays;
    private final IntFunction<List<String>> takenPortSays;

    /**
     * @param engine               the engine under test, as {@code --distributed-backend} names it
     * @param lostPeerSeconds      within how many seconds rank 0 fails once rank 1's process died
     * @param unreachableStoreSays what a rank that finds no store at 127.0.0.1:PORT says
     * @param takenPortSays        what rank 0 says when another program holds its MASTER_PORT
     */
    protected EngineFailureSuite(
            String engine,
            double lostPeerSeconds,
            IntFunction<List<String>> unreachableStoreSays,
            IntFunction<List<String>> takenPortSays) {
        this.engine = engine;
        this.lostPeerSeconds = lostPeerSeconds;
        this.unreachableStoreSays = unreachableStoreSays;
        this.takenPortSays = takenPortSays;
    }

    /** Runs {@code processes} fault workers in {@code mode}, process r with the launch environment {@code env.apply(r)}. */
    protected final List<Result> faultWorkers(
            int processes, String mode, IntFunction<Map<String, String>> env, int seconds) {
        return JvmWorkers.run(
                processes,
                r -> JvmWorkers.javaCommand(FaultWorker.class, List.of(), List.of(mode, engine)),
                env,
                tmp,
                Duration.ofSeconds(seconds));
    }

    /** The store's address (127.0.0.1:{@code port}) and {@code more} (name, value, ...). */
    protected static Map<String, String> storeAnd(int port, String... more) {
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

    /** Rank {@code rank} of a world of two started alone: its output, once it exited with 4 (it could not join). */
    private String aloneFailingToJoin(int rank, int port) {
        List<Result> results =
                faultWorkers(1, "absent", r -> storeAnd(port, "RANK", Integer.toString(rank), "WORLD_SIZE", "2"), 40);
        assertThat(results.get(0).exitCode()).as(JvmWorkers.describe(results)).isEqualTo(4);
        return results.get(0).output();
    }

    /**
     * Rank 1, misbehaving as {@code mode} says, leaves rank 0 waiting: rank 0's allreduce fails at
     * its timeout, within twice the timeout, saying {@code says}.
     */
    private void rankZeroTimesOut(String mode, double timeoutSeconds, String... says) {
        String out = JvmWorkers.failedAsExpected(twoRanks(mode), 0);
        assertThat(out).contains("CollectiveTimeoutException").contains(says);
        assertThat(JvmWorkers.failedAfter(out)).isLessThan(2 * timeoutSeconds);
    }

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void aRankThatStopsCallingCollectivesTimesOutTheOthers() {
        rankZeroTimesOut("absent", 3, engine + " world rank 0 of 2: allreduce #3 (float32[1024] SUM)");
    }

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void aRankThatDiesIsNamedByTheOthers() {
        List<Result> results = twoRanks("die");
        assertThat(results.get(1).exitCode()).isEqualTo(9);
        String out = JvmWorkers.failedAsExpected(results, 0);
        assertThat(out).contains("allreduce #3").contains("lost peer 127.0.0.1 (rank(s) 1)");
        assertThat(JvmWorkers.failedAfter(out)).isLessThan(lostPeerSeconds);
    }

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void aStoppedRankIsReportedAsAStallThenFailsAtTheTimeout() {
        rankZeroTimesOut(
                "stop",
                6,
                "allreduce #3 (float32[1024] SUM) has waited 2 s; rank(s) [1] have not issued it yet",
                "it fails at its timeout (6 s)");
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aMissingRankFailsTheJoinWithinItsTimeoutNamingIt() {
        int port = JvmWorkers.freePort();
        assertThat(aloneFailingToJoin(0, port))
                .contains("rank 0 of 2: rank(s) [1] did not join at ")
                .contains("127.0.0.1:" + port + " within PT5S");
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void anUnreachableStoreIsNamedWithinTheConnectTimeout() {
        int port = JvmWorkers.freePort();
        assertThat(aloneFailingToJoin(1, port)).contains(unreachableStoreSays.apply(port));
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void ranksThatDisagreeOnTheWorldSizeAreBothToldAtOnce() {
        int port = JvmWorkers.freePort();
        List<Result> results = faultWorkers(
                2, "absent", r -> storeAnd(port, "RANK", Integer.toString(r), "WORLD_SIZE", r == 0 ? "2" : "3"), 40);
        // Rank 1 finds the difference in rank 0's job and says so; rank 0, waiting for rank 1's
        // record, gives up at once (long before its timeout) with rank 1's message.
        for (Result r : results) {
            assertThat(r.exitCode()).as(JvmWorkers.describe(results)).isEqualTo(4);
            assertThat(r.output())
                    .as(JvmWorkers.describe(results))
                    .contains("rank 1 of 3: rank 0 was started with WORLD_SIZE=2 but this rank with WORLD_SIZE=3");
        }
        assertThat(results.get(0).output()).contains("127.0.0.1:" + port + " because another process did");
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
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void ranksOfDifferentRunsAreToldSo() {
        int port = JvmWorkers.freePort();
        IntFunction<Map<String, String>> ofTwoRuns = r -> storeAnd(
                port, "RANK", Integer.toString(r), "WORLD_SIZE", "2", "COHORT_RUN_ID", r == 0 ? "job-a" : "job-b");
        List<Result> results = faultWorkers(2, "absent", ofTwoRuns, 40);
        String rankOfJobB = results.get(1).output();
        assertThat(rankOfJobB).contains("rank 0 belongs to run 'job-a/0' but this rank to 'job-b/0'");
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aTakenMasterPortIsNamedAtOnce() throws Exception {
        int port = JvmWorkers.freePort();
        try (ServerSocket taken = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
            assertThat(aloneFailingToJoin(0, port)).contains(takenPortSays.apply(port));
        }
    }
}
