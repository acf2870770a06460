package dev.cohort.examples;

import static dev.cohort.examples.IdxFiles.writeSplit;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.cohort.launcher.LaunchOptions;
import dev.cohort.launcher.LaunchResult;
import dev.cohort.launcher.Launcher;
import dev.cohort.launcher.WorkerProgram;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The trainer's command line: errors in-process, a short real run through the launcher with Gloo. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class FashionMnistTrainerTest {

    @TempDir
    Path dir;

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private int trainer(String... args) {
        return new FashionMnistTrainer(new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8)).execute(args);
    }

    private String errors() {
        return err.toString(StandardCharsets.UTF_8);
    }

    @Test
    void missingDataFailsNamingTheFile() {
        Path nowhere = dir.resolve("fashion");
        assertThat(trainer("--distributed-backend", "none", "--data-dir", nowhere.toString())).isEqualTo(1);
        assertThat(errors()).contains("fashion-mnist: bad data: " + nowhere, "does not exist");
    }

    @Test
    void truncatedDataFailsNamingTheFile() throws IOException {
        writeSplit(dir, "train", 4);
        writeSplit(dir, "t10k", 2);
        Path images = dir.resolve("t10k-images-idx3-ubyte.gz");
        byte[] gz = Files.readAllBytes(images);
        Files.write(images, java.util.Arrays.copyOf(gz, gz.length - 20));
        assertThat(trainer("--distributed-backend", "none", "--data-dir", dir.toString())).isEqualTo(1);
        assertThat(errors()).contains(images.toString(), "truncated");
    }

    @Test
    void badOptionsExitWith2() {
        assertThat(trainer("--model", "resnet")).isEqualTo(2);
        assertThat(errors()).contains("--model must be mlp or cnn, got 'resnet'");
        assertThat(trainer("--distributed-backend", "nccl")).isEqualTo(2);
        assertThat(errors()).contains("unknown backend 'nccl'");
        assertThat(trainer("--batch-size", "0")).isEqualTo(2);
        assertThat(errors()).contains("--batch-size must be >= 1");
        assertThat(trainer("--resume")).isEqualTo(2);
        assertThat(errors()).contains("--resume needs --checkpoint-dir");
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void twoGlooWorkersThroughTheLauncherWriteTheSummary() throws IOException {
        assumeTrue(Files.isDirectory(RealData.DIR), "Fashion-MNIST is not installed in " + RealData.DIR);
        Path json = dir.resolve("summary.json");
        LaunchOptions options = LaunchOptions.builder().nprocPerNode(2).masterPort(0).build();
        WorkerProgram program = WorkerProgram.mainClass(FashionMnistTrainer.class.getName(), List.of(
                "--distributed-backend", "gloo", "--model", "mlp", "--epochs", "1", "--max-steps", "40",
                "--json", json.toString()));
        LaunchResult result;
        try (Launcher launcher = new Launcher(options, program)) {
            result = launcher.run();
        }
        assertThat(result.exitCode()).as(result.message()).isZero();
        JsonNode summary = new ObjectMapper().readTree(json.toFile());
        assertThat(summary.get("workers").asInt()).isEqualTo(2);
        assertThat(summary.get("backend").asText()).isEqualTo("gloo");
        assertThat(summary.get("steps").asLong()).isEqualTo(40);
        assertThat(summary.get("epochs").asDouble()).isCloseTo(40.0 / 469, org.assertj.core.data.Offset.offset(1e-5));
        assertThat(summary.get("test_accuracy").asDouble()).isBetween(0.6, 1.0);
        assertThat(summary.get("samples_per_s").asDouble()).isPositive();
        assertThat(summary.get("seconds").asDouble()).isPositive();
    }

    /** Runs the trainer on 2 Gloo workers through the launcher; returns the summary. */
    private JsonNode train(Path checkpoints, Path json, int maxRestarts, Map<String, String> env) throws IOException {
        LaunchOptions.Builder options = LaunchOptions.builder().nprocPerNode(2).masterPort(0).maxRestarts(maxRestarts);
        env.forEach(options::addEnvironment);
        WorkerProgram program = WorkerProgram.mainClass(FashionMnistTrainer.class.getName(), List.of(
                "--distributed-backend", "gloo", "--model", "mlp", "--epochs", "1", "--max-steps", "60",
                "--checkpoint-dir", checkpoints.toString(), "--checkpoint-every", "20", "--resume",
                "--json", json.toString()));
        LaunchResult result;
        try (Launcher launcher = new Launcher(options.build(), program)) {
            result = launcher.run();
        }
        assertThat(result.exitCode()).as(result.message()).isZero();
        assertThat(result.restarts()).isEqualTo(env.isEmpty() ? 0 : 1);
        return new ObjectMapper().readTree(json.toFile());
    }

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void aRankLostMidRunIsRestartedAndTheRunEndsAsTheUninterruptedOne() throws IOException {
        assumeTrue(Files.isDirectory(RealData.DIR), "Fashion-MNIST is not installed in " + RealData.DIR);
        JsonNode straight = train(dir.resolve("ckpt-a"), dir.resolve("a.json"), 0, Map.of());
        JsonNode recovered = train(dir.resolve("ckpt-b"), dir.resolve("b.json"), 1,
                Map.of(FaultDrill.AT_STEP, "50", FaultDrill.RANK, "1"));
        assertThat(recovered.get("resumed_from_step").asLong()).isEqualTo(40);   // last checkpoint before the crash
        assertThat(recovered.get("steps").asLong()).isEqualTo(straight.get("steps").asLong()).isEqualTo(60);
        assertThat(recovered.get("final_loss").asDouble()).isEqualTo(straight.get("final_loss").asDouble());
        assertThat(recovered.get("test_accuracy").asDouble()).isEqualTo(straight.get("test_accuracy").asDouble());
    }
}
