package dev.cohort.torch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.cohort.runtime.threads.ThreadsBackend;
import dev.cohort.runtime.threads.ThreadsWorld;
import dev.cohort.testkit.JvmWorkers.Result;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Communication overlaps backward on every engine, measured: two ranks train
 * {@link OverlapTraining}'s model, whose first bucket is ready tens of milliseconds before
 * backward ends. On each rank, bucket allreduces that finished inside backward must number at
 * least {@value #FINISHED_AT_LEAST} a step, while the hooks that started them held the
 * training thread for under {@value #HOOKS_AT_MOST} of the time the same communication costs it
 * without overlap. An engine that ran the allreduce on the caller's thread inside the hook
 * would fail the second condition; one that started it only when awaited, the first.
 */
class OverlapTest {

    static final int BLOCKS = 3;
    static final int STEPS = 4;
    static final double FINISHED_AT_LEAST = 0.75;
    static final double HOOKS_AT_MOST = 0.25;
    static final int ATTEMPTS = 3;

    @TempDir
    Path tmp;

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void threadsEngine() {
        assertOverlappedInOneOf(
                ATTEMPTS,
                () -> new ThreadsWorld(2, 2, Duration.ofSeconds(60))
                        .runAll(
                                rank -> {
                                    torch.set_num_threads(1);
                                    try (ThreadsBackend backend = new ThreadsBackend()) {
                                        backend.initialize();
                                        return OverlapTraining.measure(backend, BLOCKS, STEPS);
                                    }
                                },
                                Duration.ofSeconds(35)));
    }

    @ParameterizedTest(name = "{0} engine, 2 processes")
    @ValueSource(strings = {"gloo", "shm", "hier"})
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void processEngines(String engine) throws Exception {
        assumeTrue(
                engine.equals("gloo")
                        || Runtime.version().feature() >= 22
                                && EquivalenceTest.isOnClassPath("dev.cohort." + engine + "."
                                        + (engine.equals("shm") ? "ShmBackend" : "HierBackend")),
                "the " + engine + " engine needs JDK 22+ (the jdk22-plus profile)");
        int[] attempt = {0};
        assertOverlappedInOneOf(ATTEMPTS, () -> {
            String run = "overlap-" + engine + "-" + attempt[0]++;
            // Every JIT tier: the hooks' Java-side work is what this measures (the tests' child JVMs
            // otherwise run C1 only, see the parent POM).
            List<Result> results = ProcessRanks.run(
                    2,
                    OverlapWorker.class,
                    List.of("-XX:TieredStopAtLevel=4"),
                    List.of(engine),
                    run,
                    tmp.resolve("logs-" + run),
                    Duration.ofSeconds(55),
                    r -> engine.equals("hier") ? oneRankPerHost(r) : Map.of());
            List<OverlapTraining.Overlap> seen = new ArrayList<>();
            ProcessRanks.assertAllExitedZero(results);
            for (Result r : results) {
                seen.add(OverlapTraining.Overlap.parse(r.output()));
            }
            return seen;
        });
    }

    /**
     * Runs the measurement up to {@code attempts} times until each rank has shown the overlap in
     * some run, and asserts on each rank's best run. These are timings on a machine whose CPUs the
     * two ranks and the communication thread share: a training thread preempted while it starts an
     * allreduce counts as held by the hook, so one run can show a hold of a third of the
     * no-overlap wait where the next shows a tenth (seen on the threads engine), and the ranks of
     * one run are preempted independently. Taking each rank's best of a few runs is how a
     * benchmark filters such preemption; an engine that blocks in the hook fails every run.
     */
    private static void assertOverlappedInOneOf(
            int attempts, java.util.function.Supplier<List<OverlapTraining.Overlap>> measure) {
        List<OverlapTraining.Overlap> best = new ArrayList<>();
        for (int i = 1; ; i++) {
            List<OverlapTraining.Overlap> seen = measure.get();
            int attempt = i;
            seen.forEach(o -> System.out.println("attempt " + attempt + ": " + o.describe()));
            for (int rank = 0; rank < seen.size(); rank++) {
                if (best.size() <= rank) {
                    best.add(seen.get(rank));
                } else if (!overlapped(best.get(rank)) && overlapped(seen.get(rank))) {
                    best.set(rank, seen.get(rank));
                }
            }
            if (i == attempts || best.stream().allMatch(OverlapTest::overlapped)) {
                best.forEach(OverlapTest::assertOverlapped);
                return;
            }
        }
    }

    private static boolean overlapped(OverlapTraining.Overlap o) {
        return o.buckets() == 2 && o.finishedShare() >= FINISHED_AT_LEAST && o.hookShare() <= HOOKS_AT_MOST;
    }

    private static void assertOverlapped(OverlapTraining.Overlap o) {
        assertThat(o.buckets()).as(o.describe()).isEqualTo(2);
        assertThat(o.finishedShare()).as(o.describe()).isGreaterThanOrEqualTo(FINISHED_AT_LEAST);
        assertThat(o.hookShare()).as(o.describe()).isLessThanOrEqualTo(HOOKS_AT_MOST);
    }

    /** For hier: two simulated hosts of one rank each, so its stage between hosts carries the buckets. */
    private static Map<String, String> oneRankPerHost(int rank) {
        return Map.of("LOCAL_RANK", "0", "LOCAL_WORLD_SIZE", "1", "GROUP_RANK", Integer.toString(rank));
    }
}
