package dev.cohort.data;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.testkit.JvmWorkers;
import dev.cohort.testkit.JvmWorkers.Result;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Two JVMs on the tcp engine: a corrupt row group in one rank's share stops both, before the group's timeout. */
@Timeout(120)
class ErrorAgreementProcessesTest {

    @TempDir
    Path dir;

    @Test
    void bothProcessesThrowTheErrorOfTheRankThatHitIt() throws Exception {
        Path data = dir.resolve("data");
        String bad = ErrorAgreementTest.twoFilesTheSecondCorrupt(data);
        int failing = ErrorAgreementTest.rankOfTheSecondFile();
        int port = JvmWorkers.freePort();
        long start = System.nanoTime();
        List<Result> results = JvmWorkers.run(
                2,
                r -> JvmWorkers.javaCommand(TrainingWorker.class, List.of(), List.of(data.toString())),
                r -> JvmWorkers.launchEnv("127.0.0.1", port, r, 2),
                dir.resolve("logs"),
                Duration.ofSeconds(100));
        Duration took = Duration.ofNanos(System.nanoTime() - start);
        for (Result r : results) {
            assertThat(r.exitCode()).as(JvmWorkers.describe(results)).isZero();
            assertThat(r.output())
                    .as(JvmWorkers.describe(results))
                    .contains("DATAERROR rank=" + failing + " rank " + failing + ": file:" + bad + ", row group 0: ");
        }
        assertThat(took).as("well before the group's 60 s timeout").isLessThan(Duration.ofSeconds(50));
    }
}
