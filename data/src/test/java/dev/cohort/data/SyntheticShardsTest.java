package dev.cohort.data;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(60)
class SyntheticShardsTest {

    @TempDir
    Path dir;

    /** Every feature of the dataset in {@code name}, in file order, after checking the ranges. */
    private float[] written(String name, long seed) {
        List<String> files =
                SyntheticShards.write(Shards.writer(dir.resolve(name).toString(), 1000, 2000), 3000, 7, seed);
        assertThat(files).hasSize(2);
        ParquetDataset data = ParquetDataset.open(files, ColumnMapping.list("features", "label"));
        assertThat(data.examples()).isEqualTo(3000);
        assertThat(data.rowGroups()).isEqualTo(3);
        assertThat(data.width()).isEqualTo(7);
        assertThat(data.bytes()).isGreaterThan(3000L * 7 * 4); // random floats do not compress
        float[] all = new float[3000 * 7];
        int[] perClass = new int[SyntheticShards.CLASSES];
        try (ShardLoader loader =
                data.loader(new LoaderOptions().batchSize(3000).shuffleBuffer(0).seed(1), DataPosition.start(0))) {
            Batch batch = loader.next();
            batch.features().get(all);
            for (int r = 0; r < batch.rows(); r++) {
                perClass[batch.intLabels().get(r)]++;
            }
        }
        for (float f : all) {
            assertThat(f).isGreaterThanOrEqualTo(0f).isLessThan(1f);
        }
        for (int n : perClass) {
            assertThat(n).as("examples of a class, of 3000").isBetween(200, 400);
        }
        return all;
    }

    @Test
    void theSameSeedGivesTheSameExamplesAnotherSeedOthers() {
        float[] first = written("a", 5);
        assertThat(written("b", 5)).containsExactly(first);
        assertThat(written("c", 6)).isNotEqualTo(first);
    }

    @Test
    void noRowsOrNoWidthIsRefused() {
        ShardWriter writer = ShardWriter.to(dir.toString());
        assertThatThrownBy(() -> SyntheticShards.write(writer, 0, 5, 1)).hasMessage("rows must be >= 1, not 0");
        assertThatThrownBy(() -> SyntheticShards.write(writer, 5, 0, 1)).hasMessage("width must be >= 1, not 0");
    }
}
