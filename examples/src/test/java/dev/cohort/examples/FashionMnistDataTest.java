package dev.cohort.examples;

import static dev.cohort.examples.IdxFiles.gzip;
import static dev.cohort.examples.IdxFiles.idx;
import static dev.cohort.examples.IdxFiles.images;
import static dev.cohort.examples.IdxFiles.labels;
import static dev.cohort.examples.IdxFiles.write;
import static dev.cohort.examples.IdxFiles.writeSplit;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
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
        write(dir.resolve("t10k-images-idx3-ubyte"), images(5));   // not gzip'd: also accepted
        write(dir.resolve("t10k-labels-idx1-ubyte"), labels(5));
        FashionMnist data = FashionMnist.load(dir);
        assertThat(data.train().count()).isEqualTo(12);
        assertThat(data.test().count()).isEqualTo(5);
        assertThat(data.train().longLabels()).startsWith(0L, 1L, 2L);
        float[] x = data.test().normalizedPixels();
        assertThat(x[0]).isCloseTo(-FashionMnist.MEAN / FashionMnist.STD, org.assertj.core.data.Offset.offset(1e-6f));
        assertThat(x[4 * 784]).isCloseTo((4 / 255f - FashionMnist.MEAN) / FashionMnist.STD,
                org.assertj.core.data.Offset.offset(1e-6f));
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
                .hasMessageContaining("file not found").hasMessageContaining("dataset-fashion-mnist");
    }

    @Test
    void missingDirectory() {
        Path nowhere = dir.resolve("nowhere");
        assertThatThrownBy(() -> FashionMnist.load(nowhere))
                .hasMessageContaining(nowhere.toString()).hasMessageContaining("does not exist");
    }

    @Test
    void wrongImageSize() throws IOException {
        write(dir.resolve("train-images-idx3-ubyte.gz"),
                gzip(idx(IdxFile.IMAGES_MAGIC, new int[] {2, 27, 28}, new byte[2 * 27 * 28])));
        write(dir.resolve("train-labels-idx1-ubyte.gz"), gzip(labels(2)));
        assertThatThrownBy(() -> FashionMnist.loadSplit(dir, "train"))
                .hasMessageContaining("train-images-idx3-ubyte.gz").hasMessageContaining("27x28, expected 28x28");
    }

    @Test
    void labelOutOfRange() throws IOException {
        write(dir.resolve("train-images-idx3-ubyte.gz"), gzip(images(2)));
        write(dir.resolve("train-labels-idx1-ubyte.gz"), gzip(idx(IdxFile.LABELS_MAGIC, new int[] {2}, new byte[] {3, 10})));
        assertThatThrownBy(() -> FashionMnist.loadSplit(dir, "train"))
                .hasMessageContaining("train-labels-idx1-ubyte.gz").hasMessageContaining("label 1 is 10");
    }

    @Test
    void summaryJsonHasTheIssuesFields() {
        TrainingSummary s = new TrainingSummary("mlp", "gloo", 2, 3, 1407, 128, 0.8871, java.util.List.of(0.84, 0.87, 0.8871),
                0.25, 5123.456, 61.25, 400, 50, 1);
        assertThat(s.toJson()).contains("\"workers\": 2,", "\"epochs\": 3,", "\"test_accuracy\": 0.8871,",
                "\"samples_per_s\": 5123.46,", "\"seconds\": 61.25,", "\"epoch_test_accuracy\": [0.84, 0.87, 0.8871]",
                "\"resumed_from_step\": 400,", "\"steps_redone\": 50,", "\"restarts\": 1,");
        assertThat(s.describe()).endsWith("restarts 1, resumed from step 400, steps redone 50");
        TrainingSummary unknown = new TrainingSummary("mlp", "gloo", 2, 3, 1407, 128, 0.8871, java.util.List.of(),
                0.25, 5123.456, 61.25, 0, TrainingSummary.UNKNOWN, 2);
        assertThat(unknown.toJson()).contains("\"steps_redone\": null,", "\"restarts\": 2,");
        assertThat(unknown.describe()).endsWith("steps redone unknown (no --checkpoint-dir)");
    }
}
