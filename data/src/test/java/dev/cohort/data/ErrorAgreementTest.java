package dev.cohort.data;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.runtime.threads.ThreadsWorld;
import java.io.RandomAccessFile;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(60)
class ErrorAgreementTest {

    @TempDir
    Path dir;

    @Test
    void aReadErrorOnOneRankIsThrownOnEveryRankNamingThatRank() throws Exception {
        List<String> files = Shards.write(dir, 100, 50, 50);
        String bad = files.get(1).replace("file:", "");
        try (RandomAccessFile raw = new RandomAccessFile(bad, "rw")) {
            raw.seek(4); // the first page header
            raw.write(new byte[] {(byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF});
        }
        ParquetDataset data = ParquetDataset.open(List.of(dir.toString()), ColumnMapping.list("features", "label"));
        int failing = -1;
        for (int r = 0; r < 2; r++) {
            EpochPlan plan = EpochPlan.compute(data.rowGroupRows(), 9, Remainder.DROP, 0, DataPosition.start(0), 2, r);
            if (Arrays.stream(plan.input).anyMatch(id -> id >= 50)) {
                failing = r;
            }
        }
        assertThat(failing).as("the corrupt row group is in one rank's share").isNotNegative();
        int failingRank = failing;
        ThreadsWorld world = new ThreadsWorld(2, 2, Duration.ofSeconds(20));
        List<RuntimeException> errors = world.runAll(
                rank -> {
                    LoaderOptions options = new LoaderOptions()
                            .agreeOnErrors(world.group(rank))
                            .batchSize(10)
                            .seed(9)
                            .shuffleBuffer(0)
                            .remainder(Remainder.DROP);
                    try (ShardLoader loader = data.loader(options, DataPosition.start(0))) {
                        while (loader.hasNext()) {
                            loader.next();
                        }
                        return null;
                    } catch (DataException e) {
                        return e;
                    }
                },
                Duration.ofSeconds(45));
        for (RuntimeException e : errors) {
            assertThat(e)
                    .isInstanceOf(DataException.class)
                    .hasMessageStartingWith("rank " + failingRank + ": file:" + bad + ", row group 0: ");
            assertThat(((DataException) e).rank()).isEqualTo(failingRank);
            assertThat(((DataException) e).file()).isEqualTo("file:" + bad);
        }
        assertThat(ShardLoaderTest.dataThreads()).isEmpty();
    }
}
