package dev.cohort.data;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** A dataset streamed through {@link ShardWriter.Output}: whole once finished, gone if not. */
@Timeout(60)
class ShardWriterTest {

    @TempDir
    Path dir;

    private List<String> names() throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.map(f -> f.getFileName().toString())
                    .filter(f -> !f.endsWith(".crc"))
                    .sorted()
                    .toList();
        }
    }

    @Test
    void filesHaveTemporaryNamesUntilTheDatasetIsFinished() throws IOException {
        ShardWriter writer = Shards.writer(dir.toString(), 10, 30);
        List<String> files;
        try (ShardWriter.Output out = writer.open(Shards.WIDTH)) {
            out.append(Shards.features(50), Shards.labels(50), 40);
            out.append(Shards.features(50), Shards.labels(50), 0);
            assertThat(names()).containsExactly("part-00000.parquet.tmp", "part-00001.parquet.tmp");
            files = out.finish();
        }
        assertThat(names()).containsExactly("part-00000.parquet", "part-00001.parquet");
        ParquetDataset data = ParquetDataset.open(files, ColumnMapping.list("features", "label"));
        assertThat(data.examples()).isEqualTo(40);
        assertThat(data.rowGroups()).isEqualTo(4);
    }

    @Test
    void closedUnfinishedTheDatasetLeavesNoFile() throws IOException {
        try (ShardWriter.Output out = Shards.writer(dir.toString(), 10, 30).open(Shards.WIDTH)) {
            out.append(Shards.features(50), Shards.labels(50), 50);
            assertThat(names()).hasSize(2);
        }
        assertThat(names()).isEmpty();
    }
}
