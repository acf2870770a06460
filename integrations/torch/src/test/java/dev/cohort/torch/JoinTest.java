package dev.cohort.torch;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.libtorch.LibTorch;
import dev.cohort.testkit.JvmWorkers.Result;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Uneven inputs ({@link dev.cohort.api.Join}): ranks with 100, 90 and 73 batches train to the end
 * without a hang or a timeout, every rank ends with the weights of one process that trains at each
 * step on the batches that exist then, and {@code averageAll} averages over the ranks still training;
 * with buckets, with ZeRO, with clipping; in threads, and in processes on gloo and shm.
 */
class JoinTest {

    @TempDir
    Path tmp;

    @BeforeAll
    static void load() {
        LibTorch.load();
    }

    @ParameterizedTest(name = "{0}, ZeRO stage {1}, clip {2}")
    @CsvSource({"sgd, 0, false", "sgd, 0, true", "adamw, 1, false", "adamw, 2, true"})
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void unevenRanksTrainAsOneProcessOnTheBatchesThatExist(String kind, int stage, boolean clip) {
        JoinTraining.Outcome reference = JoinTraining.single(kind, clip, JoinTraining.BATCHES);
        List<JoinTraining.Outcome> ranks = ThreadRanks.run(
                3,
                Duration.ofSeconds(100),
                backend -> JoinTraining.distributed(backend, kind, stage, clip, JoinTraining.BATCHES));
        for (int r = 0; r < 3; r++) {
            JoinTraining.Outcome o = ranks.get(r);
            assertThat(TinyTraining.maxRelativeDifference(o.weights(), reference.weights()))
                    .as("rank %d", r)
                    .isLessThan(1e-4);
            for (int s = 0; s < JoinTraining.BATCHES[r]; s++) {
                assertThat(o.meanLoss()[s])
                        .as("rank %d's averageAll at step %d", r, s)
                        .isCloseTo(reference.meanLoss()[s], org.assertj.core.data.Offset.offset(1e-4));
            }
        }
        assertThat(ranks.get(0).weights()).isEqualTo(ranks.get(2).weights());
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void everyRankOutOfDataAtOnceEndsTheScope() {
        int[] none = {0, 0};
        List<JoinTraining.Outcome> ranks = ThreadRanks.run(
                2, Duration.ofSeconds(60), backend -> JoinTraining.distributed(backend, "sgd", 0, false, none));
        assertThat(ranks.get(0).weights()).isEqualTo(ranks.get(1).weights());
    }

    @Test
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void inProcessesOnGlooAndShm() throws Exception {
        JoinTraining.Outcome reference = JoinTraining.single("sgd", false, JoinTraining.BATCHES);
        for (String engine : ProcessRanks.glooAndShm()) {
            List<Result> results = ProcessRanks.run(
                    3,
                    JoinWorker.class,
                    List.of(tmp.toString(), engine),
                    "join-" + engine,
                    tmp.resolve("logs-" + engine),
                    Duration.ofSeconds(120));
            ProcessRanks.assertAllExitedZero(results);
            for (int r = 0; r < 3; r++) {
                float[] w = EquivalenceTest.parse(Files.readString(tmp.resolve(engine + "-rank-" + r + ".txt")));
                assertThat(TinyTraining.maxRelativeDifference(w, reference.weights()))
                        .as("%s rank %d", engine, r)
                        .isLessThan(1e-4);
            }
        }
    }
}
