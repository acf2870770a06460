package dev.cohort.data;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledIf;
import org.junit.jupiter.api.io.TempDir;

@Timeout(120)
class ConvertTest {

    private static final Path FASHION = Path.of("/usr/share/datasets/fashion-mnist");

    @TempDir
    Path dir;

    private Path idx(String name, int[] sizes, int[] bytes) throws IOException {
        Path file = dir.resolve(name);
        try (DataOutputStream out = new DataOutputStream(Files.newOutputStream(file))) {
            out.writeInt(0x0800 | sizes.length);
            for (int s : sizes) {
                out.writeInt(s);
            }
            for (int b : bytes) {
                out.writeByte(b);
            }
        }
        return file;
    }

    @Test
    void idxImagesBecomeShardsOfScaledPixelsAndLabels() throws IOException {
        int[] pixels = new int[3 * 2 * 2];
        for (int i = 0; i < pixels.length; i++) {
            pixels[i] = i * 20;
        }
        Path images = idx("images", new int[] {3, 2, 2}, pixels);
        Path labels = idx("labels", new int[] {3}, new int[] {7, 0, 255});
        Convert.main(new String[] {
            "idx",
            images.toString(),
            labels.toString(),
            dir.resolve("out").toString(),
            "--rows-per-row-group",
            "2",
            "--rows-per-file",
            "2"
        });
        ParquetDataset data =
                ParquetDataset.open(List.of(dir.resolve("out").toString()), ColumnMapping.list("features", "label"));
        assertThat(data.files()).hasSize(2);
        assertThat(data.rowGroups()).isEqualTo(2);
        assertThat(data.width()).isEqualTo(4);
        try (ShardLoader loader =
                data.loader(new LoaderOptions().batchSize(3).shuffleBuffer(0).seed(1), DataPosition.start(0))) {
            Batch batch = loader.next();
            float[] first = new float[4];
            int label0 = -1;
            for (int r = 0; r < 3; r++) {
                if (batch.intLabels().get(r) == 7) {
                    batch.features().get(r * 4, first);
                    label0 = 7;
                }
            }
            assertThat(label0).isEqualTo(7);
            assertThat(first).containsExactly(0f, 20 / 255f, 40 / 255f, 60 / 255f);
        }
        Path fewer = idx("fewer", new int[] {2}, new int[] {1, 2});
        assertThatThrownBy(() -> Convert.idx(images, fewer, dir.resolve("x").toString(), 10, 10))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("holds 3 images but")
                .hasMessageContaining("holds 2 labels");
    }

    static boolean fashionMnistInstalled() {
        return Files.isRegularFile(FASHION.resolve("t10k-images-idx3-ubyte.gz"));
    }

    @Test
    @EnabledIf("fashionMnistInstalled")
    void fashionMnistsTestSetConverts() {
        List<String> files = Convert.idx(
                FASHION.resolve("t10k-images-idx3-ubyte.gz"),
                FASHION.resolve("t10k-labels-idx1-ubyte.gz"),
                dir.toString(),
                1000,
                5000);
        assertThat(files).hasSize(2);
        ParquetDataset data = ParquetDataset.open(files, ColumnMapping.list("features", "label"));
        assertThat(data.examples()).isEqualTo(10_000);
        assertThat(data.rowGroups()).isEqualTo(10);
        assertThat(data.width()).isEqualTo(784);
        int[] perClass = new int[10];
        try (ShardLoader loader = data.loader(new LoaderOptions().batchSize(500).readers(2), DataPosition.start(0))) {
            while (loader.hasNext()) {
                Batch b = loader.next();
                for (int r = 0; r < b.rows(); r++) {
                    perClass[b.intLabels().get(r)]++;
                }
            }
        }
        assertThat(perClass).containsOnly(1000);
    }
}
