package dev.cohort.data;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.testkit.JvmWorkers;
import dev.cohort.testkit.JvmWorkers.Result;
import dev.cohort.testkit.TwoHosts;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * HDFS on one host, a rank on each of two: an {@link HdfsServer} process in host A's network
 * namespace serving at {@value TwoHosts#ADDRESS_A}, and two ranks on the tcp engine, rank 0 on A and
 * rank 1 on B, reading their shares over {@code hdfs://} for two epochs (errors agreed on) and
 * averaging after each batch. Skipped where network namespaces cannot be made.
 */
// Above the sum of the deadlines below (45 + 45 + 30 s), so that they, which kill what they wait
// for, always come first.
@Timeout(value = 150, unit = TimeUnit.SECONDS)
class HdfsTwoHostsTest {

    private static final int EXAMPLES = 400;
    private static final int EPOCHS = 2;

    @TempDir
    Path dir;

    @Test
    void ranksOnTwoHostsReadTheirSharesFromHdfsOnTheFirstAndSeeEveryExampleOncePerEpoch() throws Exception {
        try (TwoHosts hosts = TwoHosts.createOrSkip();
                HdfsServer.Running hdfs = HdfsServer.Running.onHostA(hosts, dir.resolve("hdfs"), EXAMPLES, null)) {
            String root = hdfs.awaitReady(Duration.ofSeconds(45));
            assertThat(root).startsWith("hdfs://" + TwoHosts.ADDRESS_A + ":");
            List<String> args = new ArrayList<>(List.of(root + "/part-*.parquet", Integer.toString(EPOCHS)));
            HdfsServer.CLIENT_CONF.forEach((key, value) -> args.add(key + "=" + value));
            List<Result> results = JvmWorkers.run(
                    2,
                    r -> hosts.on(r, JvmWorkers.javaCommand(TrainingWorker.class, List.of(), args)),
                    r -> JvmWorkers.launchEnv(TwoHosts.ADDRESS_A, TwoHosts.port(29_600), r, 2),
                    dir.resolve("logs"),
                    Duration.ofSeconds(45));

            String all = JvmWorkers.describe(results);
            for (Result r : results) {
                assertThat(r.exitCode()).as(all).isZero();
                // The sum, over the batches of both epochs, of the two ranks' mean id: half of all ids, twice.
                assertThat(r.output()).as(all).contains("DONE AVERAGED " + (double) EXAMPLES * (EXAMPLES - 1) / 2);
            }
            for (int epoch = 0; epoch < EPOCHS; epoch++) {
                List<Integer> both = new ArrayList<>();
                for (Result r : results) {
                    List<Integer> mine = idsOf(r.output(), epoch);
                    assertThat(mine).as("rank %d, epoch %d", r.rank(), epoch).hasSize(EXAMPLES / 2);
                    both.addAll(mine);
                }
                assertThat(both).as("epoch %d", epoch).hasSize(EXAMPLES).doesNotHaveDuplicates();
            }
            assertThat(idsOf(results.get(0).output(), 0))
                    .isNotEqualTo(idsOf(results.get(0).output(), 1));
        }
    }

    /** The ids a {@link TrainingWorker} saw in {@code epoch}, from its {@code EPOCH e IDS ...} line. */
    private static List<Integer> idsOf(String output, int epoch) {
        Matcher m = Pattern.compile("EPOCH " + epoch + " IDS ([0-9,]+)").matcher(output);
        if (!m.find()) {
            throw new AssertionError("no 'EPOCH " + epoch + " IDS' line in:\n" + output);
        }
        return Arrays.stream(m.group(1).split(",")).map(Integer::valueOf).toList();
    }
}
