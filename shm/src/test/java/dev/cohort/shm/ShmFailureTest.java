package dev.cohort.shm;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.core.testing.JvmWorkers;
import dev.cohort.core.testing.JvmWorkers.Result;
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
import org.junit.jupiter.api.io.TempDir;

/** Lost and absent peers on shm fail in time, naming the peer; nothing is left in /dev/shm. */
class ShmFailureTest {

    @TempDir
    Path tmp;

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void aRankThatDiesIsNamedByTheOthersBeforeTheTimeout() {
        String run = ShmProcessesTest.runId("die");
        List<Result> results = ShmProcessesTest.run("die", run, 2, tmp, Duration.ofSeconds(60));
        String out = results.get(0).output();
        assertThat(results.get(1).exitCode()).isEqualTo(9);
        assertThat(results.get(0).exitCode()).as(JvmWorkers.describe(results)).isEqualTo(3);
        assertThat(out).contains("shm world rank 0 of 2: allreduce #3 (float32[1024] SUM)")
                .contains("lost peer rank 1 (pid ");
        assertThat(JvmWorkers.failedAfter(out)).isLessThan(1.0);   // liveness is checked while waiting: well before the 3 s timeout
        assertThat(ShmProcessesTest.leftovers(run)).isEmpty();
    }

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void aRankThatStopsCallingCollectivesTimesOutTheOthers() {
        String run = ShmProcessesTest.runId("absent");
        List<Result> results = ShmProcessesTest.run("absent", run, 2, tmp, Duration.ofSeconds(60));
        String out = results.get(0).output();
        assertThat(results.get(0).exitCode()).as(JvmWorkers.describe(results)).isEqualTo(3);
        assertThat(out).contains("CollectiveTimeoutException")
                .contains("shm world rank 0 of 2: allreduce #3 (float32[1024] SUM): timed out after PT3S waiting for rank(s) [1]");
        assertThat(JvmWorkers.failedAfter(out)).isBetween(2.9, 6.0);
        assertThat(ShmProcessesTest.leftovers(run)).isEmpty();
    }

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void aRankKilledFromOutsideWhileTheOthersWaitIsNamed() throws Exception {
        String run = ShmProcessesTest.runId("sigkill");
        // Rank 1 stops calling collectives; the test SIGKILLs it while rank 0 waits in allreduce #3
        // (whose timeout, 3 s, is not reached: the death is noticed first).
        Thread killer = Thread.ofPlatform().start(() -> {
            Path log = tmp.resolve("rank-1.log");
            try {
                for (int i = 0; i < 600; i++) {
                    Thread.sleep(50);
                    String text = Files.exists(log) ? Files.readString(log) : "";
                    Matcher m = Pattern.compile("ABSENT pid (\\d+)").matcher(text);
                    if (m.find()) {
                        Thread.sleep(1000);
                        ProcessHandle.of(Long.parseLong(m.group(1))).ifPresent(ProcessHandle::destroyForcibly);
                        return;
                    }
                }
            } catch (InterruptedException | IOException e) {
                throw new IllegalStateException(e);
            }
        });
        List<Result> results = ShmProcessesTest.run("absent", run, 2, tmp, Duration.ofSeconds(60));
        killer.join();
        String out = results.get(0).output();
        assertThat(results.get(1).exitCode()).as(JvmWorkers.describe(results)).isEqualTo(137);
        assertThat(results.get(0).exitCode()).as(JvmWorkers.describe(results)).isEqualTo(3);
        assertThat(out).contains("allreduce #3").contains("lost peer rank 1 (pid ");
        assertThat(JvmWorkers.failedAfter(out)).isLessThan(2.9);
        assertThat(ShmProcessesTest.leftovers(run)).isEmpty();
    }
}
