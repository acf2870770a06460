package dev.cohort.data;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.runtime.threads.ThreadsWorld;
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

    /** Two files of one row group of 50 rows each in {@code dir}, the second's first page corrupt; returns its path. */
    static String twoFilesTheSecondCorrupt(Path dir) throws java.io.IOException {
        String bad = Shards.write(dir, 100, 50, 50).get(1).replace("file:", "");
        Shards.corruptFirstPage(bad);
        return bad;
    }

    /** The rank (of 2) whose share holds the second file, with seed 9, DROP and no shuffle buffer. */
    static int rankOfTheSecondFile() {
        EpochPlan plan = EpochPlan.compute(new long[] {50, 50}, 9, Remainder.DROP, 0, DataPosition.start(0), 2, 0);
        return Arrays.stream(plan.input).anyMatch(id -> id >= 50) ? 0 : 1;
    }

    /** The options of both tests: errors agreed on, seed 9, DROP, no shuffle buffer, batches of 10. */
    static LoaderOptions agreeing(ProcessGroup group) {
        return new LoaderOptions()
                .agreeOnErrors(group)
                .batchSize(10)
                .seed(9)
                .shuffleBuffer(0)
                .remainder(Remainder.DROP);
    }

    @Test
    void aReadErrorOnOneRankIsThrownOnEveryRankNamingThatRank() throws Exception {
        String bad = twoFilesTheSecondCorrupt(dir);
        ParquetDataset data = ParquetDataset.open(List.of(dir.toString()), ColumnMapping.list("features", "label"));
        int failingRank = rankOfTheSecondFile();
        ThreadsWorld world = new ThreadsWorld(2, 2, Duration.ofSeconds(20));
        List<RuntimeException> errors = world.runAll(
                rank -> {
                    try (ShardLoader loader = data.loader(agreeing(world.group(rank)), DataPosition.start(0))) {
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

    /**
     * The ranks agree only every few batches (on the fewest any holds ready), so a failure in a
     * later row group of one rank's share must still stop every rank at the same step, after the
     * same batches.
     */
    @Test
    void aFailureInALaterRowGroupStopsEveryRankAtTheSameStep() throws Exception {
        List<String> files = Shards.write(dir, 400, 50, 50); // 8 files of one row group of 50
        EpochPlan plan = EpochPlan.compute(
                new long[] {50, 50, 50, 50, 50, 50, 50, 50}, 9, Remainder.DROP, 0, DataPosition.start(0), 2, 0);
        int third = (int) (plan.input[100] / 50); // rank 0's third row group
        String bad = files.get(third).replace("file:", "");
        Shards.corruptFirstPage(bad);
        java.nio.file.Files.deleteIfExists(
                Path.of(bad).resolveSibling("." + Path.of(bad).getFileName() + ".crc"));
        ParquetDataset data = ParquetDataset.open(List.of(dir.toString()), ColumnMapping.list("features", "label"));
        ThreadsWorld world = new ThreadsWorld(2, 2, Duration.ofSeconds(20));
        List<String> outcomes = world.runAll(
                rank -> {
                    int taken = 0;
                    try (ShardLoader loader = data.loader(agreeing(world.group(rank)), DataPosition.start(0))) {
                        while (loader.hasNext()) {
                            loader.next();
                            taken++;
                        }
                        return "no error after " + taken;
                    } catch (DataException e) {
                        return "after " + taken + ": " + e.getMessage();
                    }
                },
                Duration.ofSeconds(45));
        assertThat(outcomes.get(0)).as(outcomes.toString()).contains("rank 0: file:" + bad + ", row group 0: ");
        assertThat(outcomes.get(1)).isEqualTo(outcomes.get(0));
        assertThat(ShardLoaderTest.dataThreads()).isEmpty();
    }
}
