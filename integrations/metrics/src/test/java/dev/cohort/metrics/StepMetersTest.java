package dev.cohort.metrics;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.cohort.api.Topology;
import dev.cohort.api.steps.TrainingSteps;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The step meters and the metrics file, fed by steps marked on a thread as an integration marks them. */
@Timeout(60)
class StepMetersTest {

    /** {@code steps} steps of rank {@code rank}, each taking a batch of 32, averaging and stepping. */
    private static void train(int rank, int steps) throws InterruptedException {
        Thread t = new Thread(() -> {
            for (int i = 0; i < steps; i++) {
                TrainingSteps.begin(TrainingSteps.Part.DATA).end(32);
                TrainingSteps.begin(TrainingSteps.Part.AVERAGE).end();
                TrainingSteps.begin(TrainingSteps.Part.OPTIMIZER).end();
                TrainingSteps.stepEnded(rank);
            }
        });
        t.start();
        t.join();
    }

    @Test
    void theMetersCountTheirRanksStepsSamplesAndReforms() throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (StepMeters meters = new StepMeters(0, 2)) {
            meters.bindTo(registry);
            train(0, 5);
            train(1, 3); // another rank's steps in this process (the threads engine): not this one's
            TrainingSteps.reformed(1);
            assertThatThrownBy(() -> meters.bindTo(new SimpleMeterRegistry())).hasMessageContaining("bound already");
        }
        train(0, 4); // after close: not counted
        assertThat(registry.get("cohort.step.time").tag("rank", "0").timer().count())
                .isEqualTo(5);
        for (String part : List.of("data wait", "forward", "backward", "average gradients", "optimizer step")) {
            assertThat(registry.get("cohort.step.part.time")
                            .tag("part", part)
                            .timer()
                            .count())
                    .as(part)
                    .isEqualTo(5);
        }
        assertThat(registry.get("cohort.step.samples").counter().count()).isEqualTo(160);
        assertThat(registry.get("cohort.step.samples.rate").gauge().value()).isPositive();
        assertThat(registry.get("cohort.job.restarts").gauge().value()).isEqualTo(2);
        assertThat(registry.get("cohort.job.reforms").counter().count()).isEqualTo(1);
    }

    @Test
    void rankZeroAppendsALineAStepToTheMetricsFile(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("runs/steps.jsonl");
        Map<String, String> env = Map.of(MetricsFile.ENV_FILE, file.toString(), "COHORT_RESTART_COUNT", "1");
        try (AutoCloseable other = new MetricsFile().joined(null, new Topology(1, 2, 1, 2, 0), env)) {
            assertThat(Files.exists(file)).as("rank 1 writes nothing").isFalse();
        }
        for (int run = 0; run < 2; run++) { // a restarted run appends to the same file
            try (AutoCloseable zero = new MetricsFile().joined(null, new Topology(0, 2, 0, 2, 0), env)) {
                train(0, 3);
                train(1, 2);
            }
        }
        List<MetricsFile.Line> lines = MetricsFile.read(file);
        assertThat(lines).hasSize(6).allSatisfy(l -> {
            assertThat(l.rank()).isZero();
            assertThat(l.samples()).isEqualTo(32);
            assertThat(l.restarts()).isEqualTo(1);
            assertThat(l.stepS()).isPositive();
        });
        assertThat(lines)
                .extracting(MetricsFile.Line::step)
                .containsExactly(0L, 1L, 2L, 0L, 1L, 2L); // each run its own training thread

        assertThatThrownBy(() -> new MetricsFile()
                        .joined(null, new Topology(0, 1, 0, 1, 0), Map.of(MetricsFile.ENV_FILE, dir.toString())))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("rank 0 cannot write its step metrics there");
    }
}
