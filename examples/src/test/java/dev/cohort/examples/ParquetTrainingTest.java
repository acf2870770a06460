package dev.cohort.examples;

import static org.assertj.core.api.Assertions.assertThat;

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
    /** The test set's 10,000 images as shards (row groups of 500): a short epoch for the elastic run. */
    private static String smallShards;

    private static FashionMnist.Split test;

    @BeforeAll
    static void convert() throws IOException {
        RealData.assumeInstalled();
        shards = convert("train", 2000, 20_000);
        smallShards = convert("t10k", 500, 5000);
        test = FashionMnist.loadSplit(RealData.DIR, "t10k");
    }

    /** Fashion-MNIST's {@code split} as Parquet shards in a directory of that name; returns its path. */
    private static String convert(String split, int rowGroup, int perFile) throws IOException {
        String out = dir.resolve(split).toString();
        Convert.idx(
                RealData.DIR.resolve(split + "-images-idx3-ubyte.gz"),
                RealData.DIR.resolve(split + "-labels-idx1-ubyte.gz"),
                out,
                rowGroup,
                perFile);
        return out;
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

    /**
     * Through DJL on two processes (tcp), from the shards: rank 0 is killed after step 50, the
     * launcher restarts both, they resume from the checkpoint of step 40 with its data position and
     * end as the run that was not stopped, bit for bit.
     */
    @Test
    void aDjlRunFromParquetKilledMidEpochEndsAsTheUninterruptedOne() throws IOException {
        FashionMnistTrainerTest.TimedConsole console = new FashionMnistTrainerTest.TimedConsole();
        JsonNode recovered = FashionMnistTrainerTest.killedAtStep50EndsAsUninterrupted(
                List.of("--framework", "djl", "--distributed-backend", "tcp", "--tcp-timeout", "10", "--data", shards),
                dir,
                "djl",
                "0",
                console);
        assertThat(console.text()).contains("streamed from 3 Parquet file(s)", "epoch 1, step 41 of 469");
        assertThat(recovered.get("framework").asText()).isEqualTo("djl");
        assertThat(recovered.get("test_accuracy").asDouble()).isGreaterThan(0.5);
    }

    /**
     * An elastic run from Parquet (3 tcp workers, {@code --elastic 2}): the root is killed after
     * step 20 of the epoch; the two others re-form the group and train the rest of the epoch from
     * the position after step 20, re-split between them. The epoch trains 10,002 examples in all,
     * as an uninterrupted epoch at world 3 does (3 x 3,334: the 10,000 padded by 2 repeats): 20 steps
     * of 3 x 64, then 49 of 2 x 64 (the last of 2 x 9). A lost batch (9,874), or the epoch begun anew
     * (13,842), would count otherwise; that each example is among them once is the data module's
     * test ({@code EpochPlanTest}).
     */
    @Test
    void anElasticRunFromParquetTrainsTheRestOfTheEpochAmongTheSurvivors() throws IOException {
        Path json = dir.resolve("elastic.json");
        FashionMnistTrainerTest.TimedConsole console = new FashionMnistTrainerTest.TimedConsole();
        LaunchOptions options = LaunchOptions.builder()
                .nprocPerNode(3)
                .masterPort(0)
                .elastic(2)
                .addEnvironment(FaultDrill.AT_STEP, "20")
                .addEnvironment(FaultDrill.RANK, "0")
                .build();
        LaunchResult result = FashionMnistTrainerTest.launch(
                console, options, "--distributed-backend tcp --data " + smallShards + " --epochs 1 --json " + json);
        assertThat(result.exitCode()).as(console.text()).isZero();
        assertThat(result.restarts()).isZero();
        assertThat(console.text())
                .contains("going on with 2 workers as generation 1 from step 20, 64 examples per worker");
        JsonNode summary = new ObjectMapper().readTree(json.toFile());
        assertThat(summary.get("workers").asInt()).isEqualTo(2);
        assertThat(summary.get("steps").asLong()).isEqualTo(20 + 49);
        JsonNode epoch = summary.get("epochs_detail").get(0);
        assertThat(epoch.get("steps").asLong()).isEqualTo(20 + 49);
        assertThat(epoch.get("examples").asLong()).isEqualTo(10_002);
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
