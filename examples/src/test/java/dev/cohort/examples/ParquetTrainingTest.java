package dev.cohort.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.cohort.api.DistributedBackend;
import dev.cohort.data.ColumnMapping;
import dev.cohort.data.Convert;
import dev.cohort.data.ParquetDataset;
import dev.cohort.launcher.LaunchOptions;
import dev.cohort.launcher.LaunchResult;
import dev.cohort.launcher.Launcher;
import dev.cohort.launcher.WorkerProgram;
import dev.cohort.runtime.elastic.ElasticJob;
import dev.cohort.runtime.threads.ThreadsBackend;
import dev.cohort.runtime.threads.ThreadsWorld;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The trainer with {@code --data}: Fashion-MNIST's training set converted to Parquet shards
 * ({@link Convert#idx}, row groups of 2,000), streamed by each worker. Skipped without the data.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ParquetTrainingTest {

    @TempDir
    static Path dir;

    private static String shards;
    private static FashionMnist.Split test;

    @BeforeAll
    static void convert() throws IOException {
        assumeTrue(Files.isDirectory(RealData.DIR), "Fashion-MNIST is not installed in " + RealData.DIR);
        shards = dir.resolve("train").toString();
        Convert.idx(
                RealData.DIR.resolve("train-images-idx3-ubyte.gz"),
                RealData.DIR.resolve("train-labels-idx1-ubyte.gz"),
                shards,
                2000,
                20_000);
        test = FashionMnist.loadSplit(RealData.DIR, "t10k");
    }

    @Test
    void aResumedRunEndsAsTheRunThatDidNotStop() throws IOException {
        Path checkpoints = dir.resolve("ckpt");
        TrainingConfig config = TrainingConfig.defaults(Classifier.Kind.MLP);
        train(config.withMaxSteps(30).withCheckpoints(checkpoints, 10, false), new ByteArrayOutputStream());
        // Rank threads share libtorch's generator, so no two runs start from the same weights: the run
        // resumed at step 30 is compared with one that went on from step 20 without stopping.
        Path fromTwenty = FashionMnistTrainingTest.copyLeavingOut(
                checkpoints, "checkpoint-step-000000030", dir.resolve("ckpt-20"));
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        TrainingSummary resumed = train(config.withMaxSteps(40).withCheckpoints(checkpoints, 0, true), log);
        TrainingSummary straight =
                train(config.withMaxSteps(40).withCheckpoints(fromTwenty, 0, true), new ByteArrayOutputStream());
        assertThat(log.toString(StandardCharsets.UTF_8))
                .contains("streamed from 3 Parquet file(s)", "epoch 1, step 31 of 469 (30 steps done)");
        assertThat(resumed.resumedFromStep()).isEqualTo(30);
        assertThat(straight.resumedFromStep()).isEqualTo(20);
        assertThat(resumed.finalLoss()).isEqualTo(straight.finalLoss());
        assertThat(resumed.testAccuracy()).isEqualTo(straight.testAccuracy());
    }

    @Test
    void theDjlTrainerRefusesParquetData() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = new FashionMnistTrainer(
                        new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
                        new PrintStream(err, true, StandardCharsets.UTF_8))
                .execute("--framework", "djl", "--data", shards);
        assertThat(code).isEqualTo(2);
        assertThat(err.toString(StandardCharsets.UTF_8)).contains("--data: only with --framework torch");
    }

    /** The demo's target: the MLP on two worker processes (Gloo) reaches 0.88 after 5 epochs, as from IDX. */
    @Test
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void twoWorkersTrainingFromParquetReachTheDemosAccuracy() throws IOException {
        Path json = dir.resolve("summary.json");
        WorkerProgram program = WorkerProgram.mainClass(
                FashionMnistTrainer.class.getName(),
                List.of("--distributed-backend", "gloo", "--data", shards, "--epochs", "5", "--json", json.toString()));
        long start = System.nanoTime();
        LaunchResult result;
        try (Launcher launcher = new Launcher(
                LaunchOptions.builder().nprocPerNode(2).masterPort(0).build(), program)) {
            result = launcher.run();
        }
        assertThat(result.exitCode()).as(result.message()).isZero();
        JsonNode summary = new ObjectMapper().readTree(json.toFile());
        System.out.printf("5 epochs from Parquet on 2 processes: %.1f s%n", (System.nanoTime() - start) / 1e9);
        assertThat(summary.get("steps").asLong()).isEqualTo(5 * 469);
        assertThat(summary.get("test_accuracy").asDouble()).isGreaterThanOrEqualTo(0.88);
    }

    private static TrainingSummary train(TrainingConfig config, ByteArrayOutputStream log) {
        PrintStream out = new PrintStream(log, true, StandardCharsets.UTF_8);
        ParquetDataset train = ParquetDataset.open(List.of(shards), ColumnMapping.list("features", "label"));
        List<TrainingSummary> summaries = ThreadsWorld.run(2, rank -> {
            try (DistributedBackend backend = new ThreadsBackend()) {
                backend.initialize();
                return FashionMnistTraining.train(
                        ElasticJob.of(backend, Duration.ofSeconds(60)), config, train, test, out);
            }
        });
        assertThat(summaries.get(1).finalLoss()).isEqualTo(summaries.get(0).finalLoss());
        return summaries.get(0);
    }
}
