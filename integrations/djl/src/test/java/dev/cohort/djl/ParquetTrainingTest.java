package dev.cohort.djl;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.data.Convert;
import dev.cohort.data.ShardWriter;
import dev.cohort.testkit.JvmWorkers;
import dev.cohort.testkit.JvmWorkers.Result;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledIf;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link DistributedParquetDataset} under a {@link DistributedTrainer}: ranks as processes on the
 * tcp engine ({@link ParquetWorker}), reading Parquet shards.
 */
class ParquetTrainingTest {

    private static final Path FASHION = Path.of("/usr/share/datasets/fashion-mnist");

    @TempDir
    Path tmp;

    static boolean fashionMnistInstalled() {
        return Files.isRegularFile(FASHION.resolve("t10k-images-idx3-ubyte.gz"));
    }

    /** {@link ParquetWorker} on {@code world} ranks; returns OUT, the prefix of their files. */
    private Path workers(int world, String mode, Path data, List<Result> results, String... options) {
        int id = DjlRuns.nextId();
        Path out = tmp.resolve("run-" + id);
        List<String> args = new ArrayList<>(List.of(mode, data.toString(), out.toString()));
        args.addAll(List.of(options));
        results.addAll(DjlRuns.processes(tmp, Map.of(), world, ParquetWorker.class, args, id));
        return out;
    }

    private Path train(int world, String mode, Path data, String... options) {
        List<Result> results = new ArrayList<>();
        Path out = workers(world, mode, data, results, options);
        JvmWorkers.assertAllOk(results);
        return out;
    }

    private static List<String> lines(Path out, int rank, String suffix) throws IOException {
        return Files.readAllLines(Path.of(out + "-" + rank + suffix));
    }

    /**
     * Fashion-MNIST's test set converted to Parquet (20 row groups of 500 in 4 files), 2 epochs on 2
     * ranks at 32 per rank: the loss over the whole set falls to under half, the accuracy rises from
     * about chance (0.1) to above 0.7, and both ranks end with the same parameters, bit for bit.
     */
    @Test
    @EnabledIf("fashionMnistInstalled")
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void twoRanksLearnFashionMnistFromParquetAndStayIdentical() throws IOException {
        Path data = tmp.resolve("fashion");
        Convert.idx(
                FASHION.resolve("t10k-images-idx3-ubyte.gz"),
                FASHION.resolve("t10k-labels-idx1-ubyte.gz"),
                data.toString(),
                500,
                2500);
        List<Result> results = new ArrayList<>();
        Path out = workers(2, "fit", data, results, "batch=32", "epochs=2", "hidden=64");
        JvmWorkers.assertAllOk(results);
        String root = results.get(0).output();
        float[] before = lossAndAccuracy(root, "BEFORE");
        float[] after = lossAndAccuracy(root, "AFTER");
        assertThat(before[1]).as("accuracy before").isLessThan(0.3f);
        assertThat(after[1]).as("accuracy after").isGreaterThan(0.7f);
        assertThat(after[0]).as("loss after").isLessThan(before[0] / 2);
        assertThat(lines(out, 1, ".params")).isEqualTo(lines(out, 0, ".params")).isNotEmpty();
    }

    private static float[] lossAndAccuracy(String output, String when) {
        Matcher m = Pattern.compile(when + " loss=(\\S+) accuracy=(\\S+)").matcher(output);
        assertThat(m.find()).as("%s in %s", when, output).isTrue();
        return new float[] {Float.parseFloat(m.group(1)), Float.parseFloat(m.group(2))};
    }

    /**
     * 200 synthetic examples (row groups of 10 in 4 files), 2 shuffled epochs of 13 batches of 8 per
     * rank with momentum, checkpointed by the root after step 17 (epoch 1, batch 4): a job resumed
     * from that file on 2 ranks hands each rank exactly the batches the uninterrupted job handed it
     * after step 17 and ends with bit-identical parameters; resumed on 1 rank it trains on every
     * example the epoch had left, once; resumed on 2 ranks with batches of 16 it is refused on every
     * rank, naming both batch sizes.
     */
    @Test
    @Timeout(value = 400, unit = TimeUnit.SECONDS)
    void aJobResumedMidEpochFromItsCheckpointSeesExactlyTheRemainingBatches() throws IOException {
        Path data = tmp.resolve("synthetic");
        DjlWorker.Synthetic examples = DjlWorker.synthetic(200);
        ShardWriter.to(data.toString())
                .rowsPerRowGroup(10)
                .rowsPerFile(50)
                .write(examples.features(), DjlWorker.FEATURES, examples.labels());
        Path checkpoint = tmp.resolve("parquet.djl");
        Path straight = train(2, "loop", data, "epochs=2", "momentum=true", "save=17:" + checkpoint);
        assertThat(checkpoint).isRegularFile();

        List<Result> results = new ArrayList<>();
        Path resumed = workers(2, "loop", data, results, "epochs=2", "momentum=true", "resume=" + checkpoint);
        JvmWorkers.assertAllOk(results);
        for (Result r : results) {
            assertThat(r.output())
                    .contains("RESUMED AT TrainingPosition[epoch=1, batchInEpoch=4, step=17], data epoch 1: 2x32");
        }
        Set<String> consumedInEpoch1 = new HashSet<>();
        for (int rank = 0; rank < 2; rank++) {
            List<String> all = lines(straight, rank, ".batches");
            assertThat(all).hasSize(26);
            assertThat(lines(resumed, rank, ".batches")).isEqualTo(all.subList(17, 26));
            assertThat(lines(resumed, rank, ".params")).isEqualTo(lines(straight, rank, ".params"));
            all.subList(13, 17).forEach(line -> consumedInEpoch1.addAll(rowIds(line)));
        }

        Path elastic = train(1, "loop", data, "epochs=2", "momentum=true", "resume=" + checkpoint);
        List<String> rest = new ArrayList<>();
        lines(elastic, 0, ".batches").forEach(line -> rest.addAll(rowIds(line)));
        Set<String> every = new HashSet<>();
        for (int i = 0; i < 200; i++) {
            every.add(Float.toString(examples.features()[i * DjlWorker.FEATURES]));
        }
        every.removeAll(consumedInEpoch1);
        assertThat(consumedInEpoch1).hasSize(64);
        assertThat(rest).hasSize(136).containsExactlyInAnyOrderElementsOf(every);

        List<Result> refused = new ArrayList<>();
        workers(2, "loop", data, refused, "epochs=2", "momentum=true", "batch=16", "resume=" + checkpoint);
        for (Result r : refused) {
            assertThat(r.exitCode()).as("rank %d", r.rank()).isNotZero();
            assertThat(r.output())
                    .contains("was saved at world size 2 with batches of 8 per rank, this dataset's are of 16");
        }
    }

    /** The ids (first features) of a logged batch's rows: the second bracketed list of its line. */
    private static List<String> rowIds(String line) {
        String list = line.substring(line.lastIndexOf('[') + 1, line.lastIndexOf(']'));
        return List.of(list.split(", "));
    }
}
