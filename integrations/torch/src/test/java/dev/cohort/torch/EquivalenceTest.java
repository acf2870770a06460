package dev.cohort.torch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.cohort.runtime.threads.ThreadsBackend;
import dev.cohort.runtime.threads.ThreadsWorld;
import dev.cohort.testkit.JvmWorkers.Result;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * N-rank training on shards equals single-process training on the whole batch: after
 * {@value TinyTraining#STEPS} SGD steps with momentum the weights agree within 1e-5 relative.
 */
class EquivalenceTest {

    static float[] reference;

    @TempDir
    Path tmp;

    @BeforeAll
    static void trainOnOneProcess() {
        reference = TinyTraining.single();
        torch.set_num_threads(1);
    }

    @ParameterizedTest(name = "threads engine, world {0}")
    @ValueSource(ints = {1, 2, 3})
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void threadsEngineMatchesSingleProcess(int world) {
        List<float[]> weights = new ThreadsWorld(world, world, Duration.ofSeconds(30))
                .runAll(
                        rank -> {
                            try (ThreadsBackend backend = new ThreadsBackend()) {
                                backend.initialize();
                                return TinyTraining.distributed(backend);
                            }
                        },
                        Duration.ofSeconds(50));
        for (float[] w : weights) {
            assertThat(TinyTraining.maxRelativeDifference(w, reference)).isLessThan(1e-5);
            assertThat(w).containsExactly(weights.get(0)); // every rank holds the same bits
        }
    }

    @ParameterizedTest(name = "threads engine, world 3, {0}")
    @MethodSource("dev.cohort.torch.TinyTraining#variants")
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void bucketingOverlapAndAccumulationDoNotChangeTheResult(String variant) {
        List<float[]> weights = new ThreadsWorld(3, 3, Duration.ofSeconds(30))
                .runAll(
                        rank -> {
                            try (ThreadsBackend backend = new ThreadsBackend()) {
                                backend.initialize();
                                return TinyTraining.variant(backend, variant);
                            }
                        },
                        Duration.ofSeconds(50));
        for (float[] w : weights) {
            assertThat(TinyTraining.maxRelativeDifference(w, reference)).isLessThan(1e-5);
        }
    }

    @ParameterizedTest(name = "threads engine, world 3, an allocator with room on {0}")
    @ValueSource(strings = {"every rank", "ranks 0 and 2 only"})
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void bucketsTakeTheAllocatorsMemoryOnlyWhereEveryRankHasRoom(String where) {
        int refusing = where.equals("every rank") ? -1 : 1;
        List<String> outcomes = new ThreadsWorld(3, 3, Duration.ofSeconds(30))
                .runAll(
                        rank -> {
                            try (AllocatingThreadsBackend backend = new AllocatingThreadsBackend(refusing)) {
                                backend.initialize();
                                float[] w = TinyTraining.distributed(backend, 100, true, 1, false);
                                assertThat(TinyTraining.maxRelativeDifference(w, reference))
                                        .isLessThan(1e-5);
                                return TinyTraining.lastBuckets.get() + " allocated " + backend.allocated()
                                        + " released " + backend.released();
                            }
                        },
                        Duration.ofSeconds(50));
        int buckets = Integer.parseInt(outcomes.get(0).replaceAll(".* OF (\\d+) .*", "$1"));
        assertThat(buckets).isGreaterThan(1);
        if (refusing < 0) {
            assertThat(outcomes).containsOnly(buckets + " OF " + buckets + " allocated " + buckets + " released 0");
        } else {
            // Rank 1 has no room: every rank keeps its buckets in its own memory, and gives back what it got.
            assertThat(outcomes)
                    .containsExactly(
                            "0 OF " + buckets + " allocated " + buckets + " released " + buckets,
                            "0 OF " + buckets + " allocated 0 released 0",
                            "0 OF " + buckets + " allocated " + buckets + " released " + buckets);
        }
    }

    @ParameterizedTest(name = "gloo engine, world {0}")
    @ValueSource(ints = {1, 2, 3})
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void glooEngineMatchesSingleProcess(int world) throws Exception {
        List<Result> results = trainInProcesses(world, "gloo", 25L << 20, "none");
        for (Result r : results) {
            assertThat(TinyTraining.maxRelativeDifference(weights(r.rank(), null), reference))
                    .isLessThan(1e-5);
        }
    }

    @ParameterizedTest(name = "shm engine, world {0}, buckets of {1} bytes in its arena")
    @CsvSource({"2, 26214400", "3, 100"})
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shmEngineWithBucketsInItsArenaMatchesSingleProcess(int world, long bucketBytes) throws Exception {
        assumeTrue(ProcessRanks.shmAvailable(), "the shm engine needs JDK 22+ (the jdk22-plus profile)");
        List<Result> results = trainInProcesses(world, "shm", bucketBytes, "none");
        float[] first = weights(0, null);
        for (Result r : results) {
            // Every bucket lives in the shm arena: the allreduces read and write them in place.
            Matcher buckets = Pattern.compile("BUCKETS (\\d+) OF (\\d+)").matcher(r.output());
            assertThat(buckets.find()).as(r.output()).isTrue();
            assertThat(buckets.group(1)).isEqualTo(buckets.group(2));
            assertThat(Integer.parseInt(buckets.group(2))).isGreaterThanOrEqualTo(bucketBytes < 1000 ? 2 : 1);
            float[] w = weights(r.rank(), null);
            assertThat(TinyTraining.maxRelativeDifference(w, reference)).isLessThan(1e-5);
            assertThat(w).containsExactly(first); // every rank holds the same bits
        }
    }

    @ParameterizedTest(name = "{0} engine, world 2, gradients as {1}")
    @CsvSource({"gloo, bf16", "shm, fp16"})
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void compressedGradientsKeepEveryProcessInStepNearSingleProcessTraining(String engine, String compression)
            throws Exception {
        assumeTrue(
                engine.equals("gloo") || ProcessRanks.shmAvailable(),
                "the shm engine needs JDK 22+ (the jdk22-plus profile)");
        List<Result> results = trainInProcesses(2, engine, 256, compression);
        float[] first = weights(0, null);
        for (Result r : results) {
            float[] w = weights(r.rank(), null);
            // 16-bit gradients: near the float32 result, not equal to it.
            assertThat(TinyTraining.maxRelativeDifference(w, reference))
                    .isLessThan(2e-2)
                    .isGreaterThan(0);
            assertThat(w).containsExactly(first); // every rank holds the same bits
        }
    }

    /**
     * Trains on {@code world} processes of {@code engine} and asserts that each exited 0; at world
     * 3 the same processes then run every variant (no overlap, small buckets, accumulation, ...),
     * each of which must match one process within 1e-5 too.
     */
    private List<Result> trainInProcesses(int world, String engine, long bucketBytes, String compression)
            throws Exception {
        boolean variants = world == 3;
        List<Result> results = ProcessRanks.run(
                world,
                TinyTrainingWorker.class,
                List.of(
                        tmp.toString(),
                        engine,
                        Long.toString(bucketBytes),
                        compression,
                        variants ? "variants" : "plain"),
                "equivalence-" + engine + "-" + world + "-" + compression,
                tmp.resolve("logs"),
                Duration.ofSeconds(100));
        ProcessRanks.assertAllExitedZero(results);
        for (int rank = 0; variants && rank < world; rank++) {
            for (String variant : TinyTraining.VARIANTS) {
                assertThat(TinyTraining.maxRelativeDifference(weights(rank, variant), reference))
                        .as("%s, rank %d, %s", engine, rank, variant)
                        .isLessThan(1e-5);
            }
        }
        return results;
    }

    /** The weights rank {@code rank} wrote after the plain run (variant null) or {@code variant}. */
    private float[] weights(int rank, String variant) throws Exception {
        String file = variant == null ? "rank-" + rank + ".txt" : TinyTrainingWorker.fileName(rank, variant);
        return parse(Files.readString(tmp.resolve(file)));
    }

    /** Whether {@code className} is on the test class path (the jdk22-plus profile adds the shm and hier engines). */
    static boolean isOnClassPath(String className) {
        try {
            Class.forName(className, false, EquivalenceTest.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException e) {
            return false;
        }
    }

    static float[] parse(String text) {
        String[] parts = text.replace("[", "").replace("]", "").split(",\\s*");
        float[] w = new float[parts.length];
        for (int i = 0; i < parts.length; i++) {
            w[i] = Float.parseFloat(parts[i]);
        }
        return w;
    }
}
