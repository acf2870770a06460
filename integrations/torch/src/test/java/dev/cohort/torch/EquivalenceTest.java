package dev.cohort.torch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.cohort.runtime.threads.ThreadsBackend;
import dev.cohort.runtime.threads.ThreadsWorld;
import dev.cohort.testkit.JvmWorkers;
import dev.cohort.testkit.JvmWorkers.Result;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
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
    @ValueSource(
            strings = {
                "no overlap",
                "small buckets",
                "accumulation in noSync",
                "accumulation without noSync",
                "gradients zeroed in place",
                "parameters registered backwards"
            })
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void bucketingOverlapAndAccumulationDoNotChangeTheResult(String variant) {
        List<float[]> weights = new ThreadsWorld(3, 3, Duration.ofSeconds(30))
                .runAll(
                        rank -> {
                            try (ThreadsBackend backend = new ThreadsBackend()) {
                                backend.initialize();
                                return switch (variant) {
                                    case "no overlap" -> TinyTraining.distributed(backend, 25L << 20, false, 1, false);
                                    case "small buckets" -> TinyTraining.distributed(backend, 100, true, 1, false);
                                    case "accumulation in noSync" ->
                                        TinyTraining.distributed(backend, 100, true, 2, true);
                                    case "accumulation without noSync" ->
                                        TinyTraining.distributed(backend, 100, true, 2, false);
                                    case "gradients zeroed in place" ->
                                        TinyTraining.distributed(
                                                backend, 100, true, 1, false, TinyTraining.Variant.ZEROED_IN_PLACE);
                                    default -> {
                                        float[] w = TinyTraining.distributed(
                                                backend,
                                                100,
                                                true,
                                                1,
                                                false,
                                                TinyTraining.Variant.REGISTERED_BACKWARDS);
                                        // Reverse registration order put fc1 (ids 0, 1) first; backward made fc2's (2,
                                        // 3) first.
                                        assertThat(java.util.Arrays.copyOf(TinyTraining.lastOrder.get(), 2))
                                                .containsExactlyInAnyOrder(2, 3);
                                        yield w;
                                    }
                                };
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
        int port = JvmWorkers.freePort();
        List<Result> results = JvmWorkers.run(
                world,
                r -> JvmWorkers.javaCommand(TinyTrainingWorker.class, List.of(), List.of(tmp.toString())),
                r -> Map.of(
                        "MASTER_ADDR",
                        "127.0.0.1",
                        "MASTER_PORT",
                        Integer.toString(port),
                        "RANK",
                        Integer.toString(r),
                        "WORLD_SIZE",
                        Integer.toString(world)),
                tmp.resolve("logs"),
                Duration.ofSeconds(100));
        for (Result r : results) {
            assertThat(r.exitCode()).as(JvmWorkers.describe(results)).isZero();
            float[] w = parse(Files.readString(tmp.resolve("rank-" + r.rank() + ".txt")));
            assertThat(TinyTraining.maxRelativeDifference(w, reference)).isLessThan(1e-5);
        }
    }

    @ParameterizedTest(name = "shm engine, world {0}, buckets of {1} bytes in its arena")
    @CsvSource({"2, 26214400", "3, 100"})
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shmEngineWithBucketsInItsArenaMatchesSingleProcess(int world, long bucketBytes) throws Exception {
        assumeTrue(
                Runtime.version().feature() >= 22 && isOnClassPath("dev.cohort.shm.ShmBackend"),
                "the shm engine needs JDK 22+ (the jdk22-plus profile puts it on the test class path)");
        int port = JvmWorkers.freePort();
        String runId = "equivalence-" + ProcessHandle.current().pid() + "-" + world;
        List<Result> results = JvmWorkers.run(
                world,
                r -> JvmWorkers.javaCommand(
                        TinyTrainingWorker.class,
                        List.of("--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED"),
                        List.of(tmp.toString(), "shm", Long.toString(bucketBytes))),
                r -> Map.of(
                        "MASTER_ADDR",
                        "127.0.0.1",
                        "MASTER_PORT",
                        Integer.toString(port),
                        "RANK",
                        Integer.toString(r),
                        "WORLD_SIZE",
                        Integer.toString(world),
                        "COHORT_RUN_ID",
                        runId),
                tmp.resolve("logs"),
                Duration.ofSeconds(100));
        float[] first = null;
        for (Result r : results) {
            assertThat(r.exitCode()).as(JvmWorkers.describe(results)).isZero();
            // Every bucket lives in the shm arena: the allreduces read and write them in place.
            Matcher buckets = Pattern.compile("BUCKETS (\\d+) OF (\\d+)").matcher(r.output());
            assertThat(buckets.find()).as(r.output()).isTrue();
            assertThat(buckets.group(1)).isEqualTo(buckets.group(2));
            assertThat(Integer.parseInt(buckets.group(2))).isGreaterThanOrEqualTo(bucketBytes < 1000 ? 2 : 1);
            float[] w = parse(Files.readString(tmp.resolve("rank-" + r.rank() + ".txt")));
            assertThat(TinyTraining.maxRelativeDifference(w, reference)).isLessThan(1e-5);
            if (first == null) {
                first = w;
            }
            assertThat(w).containsExactly(first); // every rank holds the same bits
        }
    }

    @ParameterizedTest(name = "{0} engine, world 2, gradients as {1}")
    @CsvSource({"gloo, bf16", "shm, fp16"})
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void compressedGradientsKeepEveryProcessInStepNearSingleProcessTraining(String engine, String compression)
            throws Exception {
        assumeTrue(
                engine.equals("gloo")
                        || Runtime.version().feature() >= 22 && isOnClassPath("dev.cohort.shm.ShmBackend"),
                "the shm engine needs JDK 22+ (the jdk22-plus profile puts it on the test class path)");
        int port = JvmWorkers.freePort();
        String runId = "compressed-" + ProcessHandle.current().pid() + "-" + engine;
        List<Result> results = JvmWorkers.run(
                2,
                r -> JvmWorkers.javaCommand(
                        TinyTrainingWorker.class,
                        List.of("--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED"),
                        List.of(tmp.toString(), engine, Long.toString(256), compression)),
                r -> Map.of(
                        "MASTER_ADDR",
                        "127.0.0.1",
                        "MASTER_PORT",
                        Integer.toString(port),
                        "RANK",
                        Integer.toString(r),
                        "WORLD_SIZE",
                        "2",
                        "COHORT_RUN_ID",
                        runId),
                tmp.resolve("logs"),
                Duration.ofSeconds(100));
        float[] first = null;
        for (Result r : results) {
            assertThat(r.exitCode()).as(JvmWorkers.describe(results)).isZero();
            float[] w = parse(Files.readString(tmp.resolve("rank-" + r.rank() + ".txt")));
            // 16-bit gradients: near the float32 result, not equal to it.
            assertThat(TinyTraining.maxRelativeDifference(w, reference))
                    .isLessThan(2e-2)
                    .isGreaterThan(0);
            if (first == null) {
                first = w;
            }
            assertThat(w).containsExactly(first); // every rank holds the same bits
        }
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
