package dev.cohort.examples;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.api.DistributedBackend;
import dev.cohort.runtime.threads.ThreadsBackend;
import dev.cohort.runtime.threads.ThreadsWorld;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Real training on the real data set, two ranks as threads of this JVM. Skipped without the data. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class FashionMnistTrainingTest {

    private static FashionMnist data;

    @TempDir
    Path dir;

    @BeforeAll
    static void loadData() throws IOException {
        data = RealData.loadOrSkip();
    }

    @Test
    void twoWorkersLearnAndAgree() {
        TrainingConfig config = TrainingConfig.defaults(Classifier.Kind.MLP).withMaxSteps(250);
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        List<TrainingSummary> summaries = train(config, log);

        TrainingSummary root = summaries.get(0);
        assertThat(root.workers()).isEqualTo(2);
        assertThat(root.steps()).isEqualTo(250);
        assertThat(root.globalBatchSize()).isEqualTo(128);
        assertThat(root.finalLoss()).isLessThan(1.0); // from ln(10) = 2.3 at the start
        assertThat(root.testAccuracy()).isGreaterThan(0.75);
        assertThat(root.epochs()).isCloseTo(250.0 / 469, org.assertj.core.data.Offset.offset(1e-9));
        // Averaged values are the same on every worker.
        assertThat(summaries.get(1).testAccuracy()).isEqualTo(root.testAccuracy());
        assertThat(summaries.get(1).finalLoss()).isEqualTo(root.finalLoss());
        String printed = log.toString(StandardCharsets.UTF_8);
        assertThat(printed)
                .contains("training mlp on 2 worker(s) (threads)", "stopped at --max-steps 250", "test accuracy");
        // Progress outside the launcher: plain lines, the first at once.
        assertThat(printed).contains("epoch 1/4: 1/469 steps (0%), loss ").doesNotContain("cohort-progress");
        // The one epoch, cut short at step 250.
        assertThat(root.epochDetails()).hasSize(1);
        TrainingSummary.EpochResult epoch = root.epochDetails().get(0);
        assertThat(epoch.epoch()).isEqualTo(1);
        assertThat(epoch.steps()).isEqualTo(250);
        assertThat(epoch.epochsDone()).isEqualTo(root.epochs());
        assertThat(epoch.trainLoss()).isBetween(0.0, Math.log(10)); // the mean from the start, ln(10)
        assertThat(epoch.testAccuracy()).isEqualTo(root.testAccuracy());
        assertThat(epoch.samplesPerSecond()).isPositive();
        assertThat(summaries.get(1).epochDetails()).hasSize(1);
    }

    @Test
    void resumesFromTheLatestCheckpoint() throws IOException {
        Path checkpoints = dir.resolve("ckpt");
        TrainingConfig first = trainFromScratch(60, checkpoints, 25);
        try (var files = Files.list(checkpoints)) {
            // Saved at steps 25, 50 and 60 (the stop); the newest two are kept, beside the epochs so far.
            assertThat(files.map(p -> p.getFileName().toString()).sorted().toList())
                    .containsExactly(
                            "checkpoint-step-000000050.pt",
                            "checkpoint-step-000000060.pt",
                            EpochHistory.FILE_NAME,
                            ProgressMarker.FILE_NAME);
        }
        assertThat(ProgressMarker.read(checkpoints, System.err)).contains(new ProgressMarker.State(60, 0));
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        TrainingSummary resumed = train(first.withMaxSteps(80).withCheckpoints(checkpoints, 0, true), log)
                .get(0);
        assertThat(log.toString(StandardCharsets.UTF_8))
                .contains("resuming from " + checkpoints.resolve("checkpoint-step-000000060.pt")
                        + ": epoch 1, step 61 of 469 (60 steps done)");
        assertThat(log.toString(StandardCharsets.UTF_8)).contains("epoch 1/4: resuming at step 61 of 469");
        assertThat(resumed.steps()).isEqualTo(80);
        assertThat(resumed.epochDetails())
                .singleElement()
                .satisfies(e -> assertThat(e.steps()).isEqualTo(20));
        assertThat(resumed.resumedFromStep()).isEqualTo(60);
        assertThat(resumed.stepsRedone()).isZero();
    }

    /** Under ZeRO every worker writes its optimizer shard beside the root's checkpoint; a resumed run ends as one that did not stop. */
    @Test
    void zeroCheckpointsKeepTheirShardsAndResumeExactly() throws IOException {
        Path checkpoints = dir.resolve("ckpt");
        TrainingConfig config = TrainingConfig.defaults(Classifier.Kind.MLP)
                .withZeroStage(2)
                .withMaxSteps(60)
                .withCheckpoints(checkpoints, 25, false);
        train(config, new ByteArrayOutputStream());
        try (var files = Files.list(checkpoints)) {
            assertThat(files.map(p -> p.getFileName().toString())
                            .filter(n -> n.startsWith("checkpoint"))
                            .sorted()
                            .toList())
                    .containsExactly(
                            "checkpoint-step-000000050.pt",
                            "checkpoint-step-000000050.pt.optimizer-50.0-of-2",
                            "checkpoint-step-000000050.pt.optimizer-50.1-of-2",
                            "checkpoint-step-000000060.pt",
                            "checkpoint-step-000000060.pt.optimizer-60.0-of-2",
                            "checkpoint-step-000000060.pt.optimizer-60.1-of-2");
        }
        // Rank threads share libtorch's generator, so no two runs start from the same weights: the
        // run resumed at step 60 is compared with one that went on from step 50 without stopping.
        Path fromFifty = copyLeavingOut(checkpoints, "checkpoint-step-000000060", dir.resolve("ckpt-50"));
        TrainingSummary resumed = train(
                        config.withMaxSteps(80).withCheckpoints(checkpoints, 0, true), new ByteArrayOutputStream())
                .get(0);
        TrainingSummary straight = train(
                        config.withMaxSteps(80).withCheckpoints(fromFifty, 0, true), new ByteArrayOutputStream())
                .get(0);
        assertThat(resumed.resumedFromStep()).isEqualTo(60);
        assertThat(straight.resumedFromStep()).isEqualTo(50);
        assertThat(resumed.testAccuracy()).isEqualTo(straight.testAccuracy());
    }

    /** A run resumed from an older checkpoint than the furthest step reached counts the steps it redoes. */
    @Test
    void stepsRedoneCountsTheStepsAfterTheCheckpointThatWereDoneBefore() throws IOException {
        Path checkpoints = dir.resolve("ckpt");
        TrainingConfig first = trainFromScratch(30, checkpoints, 20);
        // As if the run had crashed after step 30: only the checkpoint of step 20 is left.
        Files.delete(checkpoints.resolve("checkpoint-step-000000030.pt"));
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        List<TrainingSummary> resumed = train(first.withMaxSteps(40).withCheckpoints(checkpoints, 20, true), log);
        for (TrainingSummary s : resumed) { // the same on every worker
            assertThat(s.resumedFromStep()).isEqualTo(20);
            assertThat(s.stepsRedone()).isEqualTo(10); // steps 21..30
            assertThat(s.restarts()).isZero();
        }
        assertThat(log.toString(StandardCharsets.UTF_8)).contains("resumed from step 20, steps redone 10");
        assertThat(ProgressMarker.read(checkpoints, System.err)).contains(new ProgressMarker.State(40, 10));
        // Resumed again from step 20 (steps 21..40 done twice already): each of them counts again.
        Files.delete(checkpoints.resolve("checkpoint-step-000000040.pt"));
        assertThat(train(first.withMaxSteps(40).withCheckpoints(checkpoints, 0, true), log)
                        .get(0)
                        .stepsRedone())
                .isEqualTo(30);
        // A fresh run (no --resume, first attempt) starts the count again.
        TrainingSummary fresh = train(first.withMaxSteps(5), log).get(0);
        assertThat(fresh.stepsRedone()).isZero();
        assertThat(ProgressMarker.read(checkpoints, System.err)).contains(new ProgressMarker.State(5, 0));
    }

    /** A copy of {@code checkpoints} in {@code to}, without the files whose names start with {@code leftOut}. */
    static Path copyLeavingOut(Path checkpoints, String leftOut, Path to) throws IOException {
        Files.createDirectories(to);
        try (var files = Files.list(checkpoints)) {
            for (Path p : files.toList()) {
                if (!p.getFileName().toString().startsWith(leftOut)) {
                    Files.copy(p, to.resolve(p.getFileName()));
                }
            }
        }
        return to;
    }

    /**
     * Trains the MLP {@code steps} steps from scratch, a checkpoint every {@code every} steps in
     * {@code checkpoints}; returns that run's configuration, for the runs that resume it.
     */
    private static TrainingConfig trainFromScratch(int steps, Path checkpoints, int every) {
        TrainingConfig config = TrainingConfig.defaults(Classifier.Kind.MLP)
                .withMaxSteps(steps)
                .withCheckpoints(checkpoints, every, false);
        train(config, new ByteArrayOutputStream());
        return config;
    }

    private static List<TrainingSummary> train(TrainingConfig config, ByteArrayOutputStream log) {
        PrintStream out = new PrintStream(log, true, StandardCharsets.UTF_8);
        return ThreadsWorld.run(2, rank -> {
            try (DistributedBackend backend = new ThreadsBackend()) {
                backend.initialize();
                return FashionMnistTraining.train(
                        dev.cohort.runtime.elastic.ElasticJob.of(backend, java.time.Duration.ofSeconds(60)),
                        config,
                        data,
                        out);
            }
        });
    }
}
