package dev.cohort.examples;

import static dev.cohort.examples.IdxFiles.gzip;
import static dev.cohort.examples.IdxFiles.idx;
import static dev.cohort.examples.IdxFiles.images;
import static dev.cohort.examples.IdxFiles.labels;
import static dev.cohort.examples.IdxFiles.write;
import static dev.cohort.examples.IdxFiles.writeSplit;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.cohort.metrics.MetricsFile;
import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(value = 30, unit = TimeUnit.SECONDS)
class FashionMnistDataTest {

    @TempDir
    Path dir;

    @Test
    void loadsBothSplitsAndNormalizes() throws IOException {
        writeSplit(dir, "train", 12);
        write(dir.resolve("t10k-images-idx3-ubyte"), images(5)); // not gzip'd: also accepted
        write(dir.resolve("t10k-labels-idx1-ubyte"), labels(5));
        FashionMnist data = FashionMnist.load(dir);
        assertThat(data.train().count()).isEqualTo(12);
        assertThat(data.test().count()).isEqualTo(5);
        assertThat(data.train().longLabels()).startsWith(0L, 1L, 2L);
        float[] x = data.test().normalizedPixels();
        assertThat(x[0]).isCloseTo(-FashionMnist.MEAN / FashionMnist.STD, org.assertj.core.data.Offset.offset(1e-6f));
        assertThat(x[4 * 784])
                .isCloseTo(
                        (4 / 255f - FashionMnist.MEAN) / FashionMnist.STD, org.assertj.core.data.Offset.offset(1e-6f));
    }

    @Test
    void countMismatchNamesBothFiles() throws IOException {
        writeSplit(dir, "train", 12);
        write(dir.resolve("train-labels-idx1-ubyte.gz"), gzip(labels(11)));
        assertThatThrownBy(() -> FashionMnist.loadSplit(dir, "train"))
                .isInstanceOf(DataFileException.class)
                .hasMessageContaining(dir.resolve("train-labels-idx1-ubyte.gz").toString())
                .hasMessageContaining("holds 11 labels but train-images-idx3-ubyte.gz holds 12 images");
    }

    @Test
    void missingFileSaysHowToGetIt() throws IOException {
        writeSplit(dir, "train", 3);
        Files.delete(dir.resolve("train-labels-idx1-ubyte.gz"));
        assertThatThrownBy(() -> FashionMnist.loadSplit(dir, "train"))
                .isInstanceOf(DataFileException.class)
                .hasMessageContaining(dir.resolve("train-labels-idx1-ubyte.gz").toString())
                .hasMessageContaining("file not found")
                .hasMessageContaining("dataset-fashion-mnist");
    }

    @Test
    void missingDirectory() {
        Path nowhere = dir.resolve("nowhere");
        assertThatThrownBy(() -> FashionMnist.load(nowhere))
                .hasMessageContaining(nowhere.toString())
                .hasMessageContaining("does not exist");
    }

    @Test
    void wrongImageSize() throws IOException {
        write(
                dir.resolve("train-images-idx3-ubyte.gz"),
                gzip(idx(IdxFile.IMAGES_MAGIC, new int[] {2, 27, 28}, new byte[2 * 27 * 28])));
        write(dir.resolve("train-labels-idx1-ubyte.gz"), gzip(labels(2)));
        assertThatThrownBy(() -> FashionMnist.loadSplit(dir, "train"))
                .hasMessageContaining("train-images-idx3-ubyte.gz")
                .hasMessageContaining("27x28, expected 28x28");
    }

    @Test
    void labelOutOfRange() throws IOException {
        write(dir.resolve("train-images-idx3-ubyte.gz"), gzip(images(2)));
        write(dir.resolve("train-labels-idx1-ubyte.gz"), gzip(idx(IdxFile.LABELS_MAGIC, new int[] {2}, new byte[] {3, 10
        })));
        assertThatThrownBy(() -> FashionMnist.loadSplit(dir, "train"))
                .hasMessageContaining("train-labels-idx1-ubyte.gz")
                .hasMessageContaining("label 1 is 10");
    }

    /** Two whole epochs, as a summary or a checkpoint holds them. */
    private static final TrainingSummary.EpochResult FIRST_EPOCH =
            new TrainingSummary.EpochResult(1, 1, 469, 60_000, 0.61, 0.84, 5000.5, 12.0);

    private static final TrainingSummary.EpochResult SECOND_EPOCH =
            new TrainingSummary.EpochResult(2, 2, 469, 60_000, 0.41, 0.87, 5100, 11.8);

    @Test
    void summaryJsonHasTheIssuesFieldsAndEachEpoch() throws IOException {
        List<TrainingSummary.EpochResult> epochs = List.of(
                FIRST_EPOCH,
                SECOND_EPOCH,
                new TrainingSummary.EpochResult(3, 3, 469, 60_000, 0.35, 0.8871, 5123.456, 11.7));
        TrainingSummary s = new TrainingSummary(
                "mlp",
                "torch",
                "gloo",
                2,
                3,
                1407,
                128,
                0.8871,
                List.of(0.84, 0.87, 0.8871),
                0.25,
                5123.456,
                61.25,
                400,
                50,
                1,
                epochs);
        JsonNode json = new ObjectMapper().readTree(s.toJson());
        assertThat(json.get("workers").asInt()).isEqualTo(2);
        assertThat(json.get("epochs").asDouble()).isEqualTo(3);
        assertThat(json.get("test_accuracy").asDouble()).isEqualTo(0.8871);
        assertThat(json.get("samples_per_s").asDouble()).isEqualTo(5123.456);
        assertThat(json.get("seconds").asDouble()).isEqualTo(61.25);
        assertThat(json.get("backend").asText()).isEqualTo("gloo");
        assertThat(json.get("framework").asText()).isEqualTo("torch");
        assertThat(json.get("resumed_from_step").asLong()).isEqualTo(400);
        assertThat(json.get("steps_redone").asLong()).isEqualTo(50);
        assertThat(json.get("restarts").asInt()).isEqualTo(1);
        assertThat(json.get("epoch_test_accuracy"))
                .extracting(JsonNode::asDouble)
                .containsExactly(0.84, 0.87, 0.8871);
        assertThat(json.get("epochs_detail")).hasSize(3);
        JsonNode second = json.get("epochs_detail").get(1);
        assertThat(second.get("epoch").asInt()).isEqualTo(2);
        assertThat(second.get("epochs_done").asDouble()).isEqualTo(2);
        assertThat(second.get("steps").asLong()).isEqualTo(469);
        assertThat(second.get("examples").asLong()).isEqualTo(60_000);
        assertThat(second.get("train_loss").asDouble()).isEqualTo(0.41);
        assertThat(second.get("test_accuracy").asDouble()).isEqualTo(0.87);
        assertThat(second.get("samples_per_s").asDouble()).isEqualTo(5100);
        assertThat(second.get("seconds").asDouble()).isEqualTo(11.8);
        // The fields the issue names come first.
        assertThat(json.fieldNames())
                .toIterable()
                .startsWith("workers", "epochs", "test_accuracy", "samples_per_s", "seconds");
        assertThat(s.describe()).endsWith("restarts 1, resumed from step 400, steps redone 50");

        TrainingSummary unknown = new TrainingSummary(
                "mlp",
                "torch",
                "gloo",
                2,
                3,
                1407,
                128,
                Double.NaN,
                List.of(),
                0.25,
                5123.456,
                61.25,
                0,
                TrainingSummary.UNKNOWN,
                2,
                List.of());
        JsonNode nulls = new ObjectMapper().readTree(unknown.toJson());
        assertThat(nulls.get("steps_redone").isNull()).isTrue();
        assertThat(nulls.get("test_accuracy").isNull()).isTrue(); // JSON has no NaN
        assertThat(nulls.get("restarts").asInt()).isEqualTo(2);
        assertThat(nulls.get("epochs_detail")).isEmpty();
        assertThat(unknown.describe()).endsWith("steps redone unknown (no --checkpoint-dir)");

        // The chart beside the summary: summary.json -> summary.png, a PNG of the chart's size.
        Path chart = TrainingChart.pathFor(dir.resolve("summary.json"));
        assertThat(chart).isEqualTo(dir.resolve("summary.png"));
        assertThat(TrainingChart.pathFor(dir.resolve("run"))).isEqualTo(dir.resolve("run.png"));
        TrainingChart.write(s, chart);
        assertIsPng(chart, TrainingChart.WIDTH, TrainingChart.HEIGHT);
    }

    /**
     * With --metrics-file, the chart's fourth panel: rank 0's steps on the epoch axis, the last line
     * at the run's last step, lines of an earlier run left out, means over runs of steps.
     */
    @Test
    void theStepMetricsArePlacedOnTheEpochAxis() throws IOException {
        // Epoch 1 whole (4 steps), epoch 2 cut at 2 of 4 steps (--max-steps): 6 steps, 8 lines.
        List<TrainingSummary.EpochResult> epochs = List.of(
                new TrainingSummary.EpochResult(1, 1, 4, 512, 0.6, 0.8, 100, 1),
                new TrainingSummary.EpochResult(2, 1.5, 2, 256, 0.5, 0.82, 100, 0.5));
        TrainingSummary s = new TrainingSummary(
                "mlp", "torch", "tcp", 2, 1.5, 6, 128, 0.82, List.of(0.8), 0.5, 100, 1.5, 0, 0, 0, epochs);
        List<MetricsFile.Line> lines = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            lines.add(
                    new MetricsFile.Line("t", 0, i, 0.010, 64, 6400, 0.001 * i, 0.005, 0.002, 0.003, 0.003, 0.001, 0));
        }
        org.jfree.data.xy.XYSeriesCollection parts = TrainingChart.stepParts(s, lines);
        assertThat(parts.getSeriesCount()).isEqualTo(5);
        org.jfree.data.xy.XYSeries data = parts.getSeries("data wait");
        assertThat(data.getItemCount()).isEqualTo(6); // under 100 steps: one point a step
        assertThat(data.getX(0).doubleValue()).isEqualTo(0.25);
        assertThat(data.getX(3).doubleValue()).isEqualTo(1.0);
        assertThat(data.getX(5).doubleValue()).isEqualTo(1.5);
        assertThat(data.getY(0).doubleValue())
                .as("line 2: the first two are an earlier run's")
                .isCloseTo(2.0, within(1e-9));
        assertThat(parts.getSeries("forward").getY(5).doubleValue()).isCloseTo(2.0, within(1e-9));
        assertThat(parts.getSeries("backward").getY(5).doubleValue()).isCloseTo(3.0, within(1e-9));

        Path chart = dir.resolve("steps.png");
        TrainingChart.write(s, lines, chart);
        assertIsPng(chart, TrainingChart.WIDTH, TrainingChart.HEIGHT * 4 / 3);
    }

    @Test
    void theEpochHistoryKeepsWhatACheckpointHadFinished() throws IOException {
        List<TrainingSummary.EpochResult> epochs = List.of(
                FIRST_EPOCH, SECOND_EPOCH, new TrainingSummary.EpochResult(3, 2.5, 235, 30_080, 0.36, 0.88, 5050, 6.1));
        ByteArrayOutputStream warnings = new ByteArrayOutputStream();
        PrintStream warn = new PrintStream(warnings, true, StandardCharsets.UTF_8);
        assertThat(EpochHistory.read(dir, 5, warn)).isEmpty(); // none yet
        EpochHistory.write(dir, epochs);
        assertThat(EpochHistory.read(dir, 3, warn)).isEqualTo(epochs);
        // Resumed from a checkpoint in epoch 3 (2 finished): epoch 3 is trained again.
        assertThat(EpochHistory.read(dir, 2, warn)).isEqualTo(epochs.subList(0, 2));
        assertThat(EpochHistory.read(dir, 0, warn)).isEmpty();
        assertThat(warnings.size()).isZero();

        Files.writeString(dir.resolve(EpochHistory.FILE_NAME), "[{\"epoch\": ");
        assertThat(EpochHistory.read(dir, 3, warn)).isEmpty();
        assertThat(warnings.toString(StandardCharsets.UTF_8)).contains(EpochHistory.FILE_NAME, "not an epoch history");
    }

    /** {@code file} is a PNG image of {@code width} x {@code height}. */
    static void assertIsPng(Path file, int width, int height) throws IOException {
        byte[] bytes = Files.readAllBytes(file);
        assertThat(bytes).startsWith(0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n');
        BufferedImage image = ImageIO.read(file.toFile());
        assertThat(image.getWidth()).isEqualTo(width);
        assertThat(image.getHeight()).isEqualTo(height);
    }
}
