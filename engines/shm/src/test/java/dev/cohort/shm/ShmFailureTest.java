package dev.cohort.shm;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.testkit.JvmWorkers;
import dev.cohort.testkit.JvmWorkers.Result;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.function.ThrowingConsumer;
import org.junit.jupiter.api.io.TempDir;

/** Lost and absent peers on shm fail in time, naming the peer; nothing is left in /dev/shm. */
class ShmFailureTest {

    @TempDir
    Path tmp;

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void aRankThatDiesIsNamedByTheOthersBeforeTheTimeout() throws Throwable {
        twoRanks("die", "die", results -> {
            assertThat(results.get(1).exitCode()).isEqualTo(9);
            String out = JvmWorkers.failedAsExpected(results, 0);
            assertThat(out)
                    .contains("shm world rank 0 of 2: allreduce #3 (float32[1024] SUM)")
                    .contains("lost peer rank 1 (pid ");
            assertThat(JvmWorkers.failedAfter(out))
                    .isLessThan(1.0); // liveness is checked while waiting: well before the 3 s timeout
        });
    }

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void aRankThatStopsCallingCollectivesTimesOutTheOthers() throws Throwable {
        twoRanks("absent", "absent", results -> {
            String out = JvmWorkers.failedAsExpected(results, 0);
            assertThat(out)
                    .contains("CollectiveTimeoutException")
                    .contains(
                            "shm world rank 0 of 2: allreduce #3 (float32[1024] SUM): timed out after PT3S waiting for rank(s) [1]");
            // Not before its timeout; how long after depends on the machine (ShmThreadsTest steps a clock instead).
            assertThat(JvmWorkers.failedAfter(out)).isGreaterThanOrEqualTo(2.9);
        });
    }

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void aRankKilledFromOutsideWhileTheOthersWaitIsNamed() throws Throwable {
        // Rank 1 stops calling collectives; the test SIGKILLs it while rank 0 waits in allreduce #3
        // (whose timeout, 3 s, is not reached: the death is noticed first).
        Thread killer = JvmWorkers.killWhenLogged(
                tmp.resolve("rank-1.log"), "ABSENT", Duration.ofSeconds(1), Duration.ofMillis(50L * 600));
        twoRanks("absent", "sigkill", results -> {
            killer.join();
            assertThat(results.get(1).exitCode())
                    .as(JvmWorkers.describe(results))
                    .isEqualTo(137);
            String out = JvmWorkers.failedAsExpected(results, 0);
            assertThat(out).contains("allreduce #3").contains("lost peer rank 1 (pid ");
            assertThat(JvmWorkers.failedAfter(out)).isLessThan(2.9);
        });
    }

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void aStoppedRankIsReportedAsAStallThenFailsAtTheTimeout() throws Throwable {
        // Rank 1 stops itself (SIGSTOP) after three allreduces; rank 0 waits in allreduce #3 (stall
        // report at 2 s, timeout 6 s). The test notes when the report and the failure appear in rank
        // 0's log, then continues rank 1, which must fail at once on its own (rank 0 is gone).
        long[] seenAt = new long[2]; // report, failure (System.nanoTime())
        Thread watcher = Thread.ofPlatform().start(() -> {
            Path log0 = tmp.resolve("rank-0.log");
            Path log1 = tmp.resolve("rank-1.log");
            try {
                for (int i = 0; i < 1200 && seenAt[1] == 0; i++) {
                    Thread.sleep(25);
                    String text = Files.exists(log0) ? Files.readString(log0) : "";
                    if (seenAt[0] == 0 && text.contains("has waited")) {
                        seenAt[0] = System.nanoTime();
                    }
                    if (text.contains("FAILED after")) {
                        seenAt[1] = System.nanoTime();
                    }
                }
                Matcher m = Pattern.compile("STOPPING pid (\\d+)").matcher(Files.readString(log1));
                if (m.find()) {
                    new ProcessBuilder("kill", "-CONT", m.group(1)).start().waitFor(10, TimeUnit.SECONDS);
                }
            } catch (InterruptedException | IOException e) {
                throw new IllegalStateException(e);
            }
        });
        twoRanks("stop", "stop", results -> {
            watcher.join(10_000);
            String out = JvmWorkers.failedAsExpected(results, 0);
            assertThat(out)
                    .contains(
                            "shm world rank 0 of 2: allreduce #3 (float32[1024] SUM) has waited 2 s; "
                                    + "rank(s) [1] have not reached it (stopped, slow or gone?); it fails at its timeout (6 s)");
            assertThat(out.split("has waited", -1)).as("one report").hasSize(2);
            assertThat(out)
                    .contains("CollectiveTimeoutException")
                    .contains("allreduce #3 (float32[1024] SUM): timed out after PT6S waiting for rank(s) [1]");
            double failedAfter = JvmWorkers.failedAfter(out);
            assertThat(failedAfter).isGreaterThanOrEqualTo(5.9);
            assertThat(seenAt[0]).as("report seen").isPositive();
            assertThat(seenAt[1]).as("failure seen").isPositive();
            // The report came before the failure (when, on a clock, ShmThreadsTest shows).
            assertThat(seenAt[0]).as("report before failure").isLessThan(seenAt[1]);
            Result stopped = results.get(1);
            assertThat(stopped.killed()).as(JvmWorkers.describe(results)).isFalse();
            assertThat(stopped.output()).contains("RESUMED").contains("peer rank 0");
            assertThat(stopped.exitCode()).isEqualTo(3);
            assertThat(JvmWorkers.failedAfter(stopped.output())).isLessThan(2.0);
        });
    }

    /**
     * Runs a job of two ranks in {@code mode} (its run named after {@code id}), checks its results,
     * and then that it left nothing in /dev/shm.
     */
    private void twoRanks(String mode, String id, ThrowingConsumer<List<Result>> check) throws Throwable {
        String run = ShmProcessesTest.runId(id);
        check.accept(ShmProcessesTest.run(mode, run, 2, tmp, Duration.ofSeconds(60)));
        assertThat(ShmProcessesTest.leftovers(run)).isEmpty();
    }
}
