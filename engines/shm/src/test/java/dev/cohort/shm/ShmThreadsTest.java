package dev.cohort.shm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.cohort.api.collective.CollectiveMismatchException;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.api.collective.Work;
import dev.cohort.runtime.SharedMemoryFiles;
import dev.cohort.shm.region.ShmAttachment;
import dev.cohort.shm.region.ShmLayout;
import dev.cohort.testkit.ConformanceSuite;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Fast checks with one thread per rank in this JVM (each rank attaches to the mapping as a
 * process would); the process tests are the ones that count.
 */
class ShmThreadsTest {

    static Map<String, String> env(String runId, int rank, int world, int localWorld) {
        Map<String, String> env = new HashMap<>();
        env.put("RANK", Integer.toString(rank));
        env.put("WORLD_SIZE", Integer.toString(world));
        env.put("LOCAL_RANK", Integer.toString(rank % localWorld));
        env.put("LOCAL_WORLD_SIZE", Integer.toString(localWorld));
        env.put("GROUP_RANK", Integer.toString(rank / localWorld));
        env.put("COHORT_RUN_ID", runId);
        return env;
    }

    static <T> List<T> onRanks(int world, IntFunction<T> body) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(world);
        try {
            List<Future<T>> fs = new ArrayList<>();
            for (int r = 0; r < world; r++) {
                int rank = r;
                fs.add(pool.submit(() -> body.apply(rank)));
            }
            List<T> out = new ArrayList<>();
            for (Future<T> f : fs) {
                out.add(f.get(100, TimeUnit.SECONDS));
            }
            return out;
        } finally {
            pool.shutdownNow();
        }
    }

    static ShmBackend backend(String runId, int rank, int world, ShmOptions options) {
        return new ShmBackend(options.connectTimeout(Duration.ofSeconds(20)), env(runId, rank, world, world));
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void conformanceWithThreeRanksAndSmallSegments() throws Exception {
        String run = "threads-" + ProcessHandle.current().pid();
        // 4 KiB segments: every size of the suite's small cases takes several pipeline segments.
        List<Integer> checks = onRanks(3, r -> {
            try (ShmBackend b = backend(run, r, 3, new ShmOptions().segmentKib(4))) {
                b.initialize();
                return ConformanceSuite.run(b.group(), false);
            }
        });
        assertThat(checks).allMatch(c -> c > 0);
        assertThat(ShmProcessesTest.leftovers(run)).isEmpty();
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void ranksThatIssueDifferentCollectivesFailWithAMismatch() throws Exception {
        List<String> errors = allreduceMismatches(
                "mismatch-" + ProcessHandle.current().pid(), r -> new float[r == 0 ? 8 : 9], r -> ReduceOp.SUM);
        assertThat(errors.get(0))
                .contains("shm world rank 0 of 2: allreduce #0 (float32[8] SUM)")
                .contains("rank 1");
        assertThat(errors.get(1)).contains("rank 0 issued a different collective");
    }

    /**
     * The message of the mismatch each of two ranks met (timeout 10 s) when it allreduced
     * {@code data.apply(rank)} with {@code op.apply(rank)}; {@code "no error"} for a rank that met none.
     */
    private static List<String> allreduceMismatches(String run, IntFunction<float[]> data, IntFunction<ReduceOp> op)
            throws Exception {
        return onRanks(2, r -> {
            try (ShmBackend b = backend(run, r, 2, new ShmOptions().timeout(Duration.ofSeconds(10)))) {
                b.initialize();
                try {
                    b.group()
                            .allreduce(DenseBuffer.of(data.apply(r)), op.apply(r))
                            .await();
                    return "no error";
                } catch (CollectiveMismatchException e) {
                    return e.getMessage();
                }
            }
        });
    }

    @ParameterizedTest(name = "world {0}")
    @ValueSource(ints = {2, 3})
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void smallAllreducesTakeOneBarrierAndEveryRankGetsTheRankOrderSumBitForBit(int world) throws Exception {
        String run = "flat" + world + "-" + ProcessHandle.current().pid();
        int flatMax = (int) (ShmProcessGroup.FLAT_MAX_BYTES / 4);
        int[] sizes = {1, 17, 1000, flatMax, flatMax + 1};
        List<List<Object>> seen = onRanks(world, r -> {
            try (ShmBackend b = backend(run, r, world, new ShmOptions())) {
                b.initialize();
                ShmProcessGroup group = (ShmProcessGroup) b.group();
                List<Object> out = new ArrayList<>();
                for (int size : sizes) {
                    for (ReduceOp op : new ReduceOp[] {ReduceOp.SUM, ReduceOp.AVG}) {
                        float[] data = new float[size];
                        for (int i = 0; i < size; i++) {
                            data[i] = operand(r, i);
                        }
                        long before = group.barriersPassed();
                        group.allreduce(DenseBuffer.of(data), op).await();
                        out.add(group.barriersPassed() - before);
                        out.add(data);
                    }
                }
                return out;
            }
        });
        int k = 0;
        for (int size : sizes) {
            for (ReduceOp op : new ReduceOp[] {ReduceOp.SUM, ReduceOp.AVG}) {
                float[] expected = new float[size];
                for (int i = 0; i < size; i++) {
                    float acc = operand(0, i);
                    for (int j = 1; j < world; j++) {
                        acc += operand(j, i);
                    }
                    expected[i] = op == ReduceOp.AVG ? acc / world : acc;
                }
                long segment = new ShmOptions().segmentBytes();
                long segments = (size * 4L + segment - 1) / segment;
                for (int r = 0; r < world; r++) {
                    // One barrier up to FLAT_MAX_BYTES; above it, the segmented path's one per segment and one more.
                    assertThat(seen.get(r).get(k))
                            .as("barriers of %s over %d floats", op, size)
                            .isEqualTo(size <= flatMax ? 1L : segments + 1);
                    assertThat((float[]) seen.get(r).get(k + 1))
                            .as("rank %d, %s over %d floats", r, op, size)
                            .containsExactly(expected);
                }
                k += 2;
            }
        }
        assertThat(ShmProcessesTest.leftovers(run)).isEmpty();
    }

    /**
     * Calls nobody awaits (a DDP bucket started during backward) are run by the engine thread:
     * while the group is busy it finds them by polling, and after the group was idle long enough
     * for the engine to park, the call itself wakes it.
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void callsNobodyAwaitsCompleteOnTheEngineThreadWhetherTheGroupWasBusyOrIdle() throws Exception {
        String run = "unawaited-" + ProcessHandle.current().pid();
        List<List<Long>> waited = onRanks(2, r -> {
            try (ShmBackend b = backend(run, r, 2, new ShmOptions())) {
                b.initialize();
                List<Long> out = new ArrayList<>();
                for (int round = 0; round < 4; round++) {
                    if (round >= 2) {
                        awaitEngineParked("cohort-shm-shm-world-rank-" + r);
                    }
                    float[] data = new float[1000 + round];
                    java.util.Arrays.fill(data, r + 1);
                    Work work = b.group().allreduce(DenseBuffer.of(data), ReduceOp.SUM);
                    long t0 = System.nanoTime();
                    while (!work.isDone()) {
                        assertThat(System.nanoTime() - t0)
                                .as("round %d not done", round)
                                .isLessThan(10_000_000_000L);
                        Thread.onSpinWait();
                    }
                    out.add((System.nanoTime() - t0) / 1_000_000);
                    assertThat(work.failure()).isEmpty();
                    assertThat(data).containsOnly(3f);
                }
                return out;
            }
        });
        // Without the engine nothing would finish; with it, well under a second (typically ~0.5 ms).
        assertThat(waited).allSatisfy(ms -> assertThat(ms).allMatch(m -> m < 2_000));
        assertThat(ShmProcessesTest.leftovers(run)).isEmpty();
    }

    /** Waits (at most 10 s) until the engine thread {@code name} parks until woken: the group has been idle. */
    private static void awaitEngineParked(String name) {
        long until = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (Thread.getAllStackTraces().keySet().stream()
                .noneMatch(t -> t.getName().equals(name) && t.getState() == Thread.State.WAITING)) {
            assertThat(System.nanoTime() - until).as(name + " parks once idle").isNegative();
            Thread.onSpinWait();
        }
    }

    /** Values whose float sums depend on the order of addition, so a rank that folded differently would show. */
    private static float operand(int rank, int i) {
        return (float) Math.scalb(1.0 + ((i * 7919 + rank * 104729) % 1000) / 997.0, (i + rank * 13) % 40 - 20);
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void ranksThatIssueTheSameLengthWithAnotherOpFailWithAMismatch() throws Exception {
        List<String> errors = allreduceMismatches(
                "mismatchop-" + ProcessHandle.current().pid(),
                r -> new float[8],
                r -> r == 0 ? ReduceOp.SUM : ReduceOp.MAX);
        assertThat(errors.get(0))
                .contains("allreduce #0 (float32[8] SUM)")
                .contains("rank 1 issued a different collective");
        assertThat(errors.get(1))
                .contains("allreduce #0 (float32[8] MAX)")
                .contains("rank 0 issued a different collective");
    }

    @Test
    @Timeout(value = 30, unit = TimeUnit.SECONDS)
    void severalHostsAreRefusedWithAPointerToGloo() {
        ShmBackend b = new ShmBackend(new ShmOptions(), env("hosts", 0, 4, 2));
        assertThatThrownBy(b::initialize)
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("WORLD_SIZE=4 and LOCAL_WORLD_SIZE=2")
                .hasMessageContaining("gloo");
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aRankWithAnotherWorldSizeIsRefused() throws Exception {
        String run = "size-" + ProcessHandle.current().pid();
        List<String> errors = onRanks(2, r -> {
            try (ShmBackend b = new ShmBackend(
                    new ShmOptions().connectTimeout(Duration.ofSeconds(5)),
                    env(run, r, r == 0 ? 2 : 3, r == 0 ? 2 : 3))) {
                b.initialize();
                return "connected";
            } catch (ShmConnectException e) {
                return e.getMessage();
            }
        });
        assertThat(errors.get(1)).contains("was created for another group: world size 2, this rank has WORLD_SIZE=3");
        assertThat(errors.get(0)).contains("rank 1 did not attach");
        assertThat(ShmProcessesTest.leftovers(run)).isEmpty();
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aStallReportTellsPeersThatHaveNotStartedTheOperationFromThoseStuckInsideIt() throws Exception {
        onRegions("stall", 3, regions -> {
            SpinBarrier.Context allreduce3 =
                    barrierContext("shm world rank 0 of 3: allreduce #3 (float32[8] SUM)", 3, 0x1234);
            // Rank 1 published the tag of #1 in #3's slot (it has not started #3); rank 2 published #3's
            // (it started it, in place, and stopped inside).
            ShmLayout.LONG.setRelease(
                    regions.get(1).layout().memory(), regions.get(1).layout().tagOffset(1, 3), 0x9876L);
            ShmLayout.LONG.setRelease(
                    regions.get(2).layout().memory(),
                    regions.get(2).layout().tagOffset(2, 3),
                    0x1234L ^ ShmProcessGroup.IN_PLACE);
            String report = new SpinBarrier(
                            regions.get(0).layout(), 0, Duration.ofMillis(1500), dev.cohort.runtime.RankNames.PLAIN)
                    .reportStall(
                            allreduce3, List.of(1, 2), Duration.ofSeconds(6).toNanos());
            assertThat(report)
                    .isEqualTo("shm world rank 0 of 3: allreduce #3 (float32[8] SUM) has waited 1.5 s; "
                            + "rank(s) [1] have not reached it (stopped, slow or gone?); rank(s) [2] started it but have not "
                            + "reached this step (stopped or slow?); it fails at its timeout (6 s)");
        });
    }

    /**
     * A wait for a rank that never comes, on a clock that moves 1 ms each time it is read: the
     * stall report names the rank once the stall time has passed on that clock, and the wait fails
     * at its timeout, naming it again; no time window of the machine's own.
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aWaitForAnAbsentRankReportsTheStallThenTimesOutOnTheBarriersClock() throws Exception {
        onRegions("stepped", 2, ShmThreadsTest::steppedClockWait);
    }

    private static void steppedClockWait(List<ShmAttachment> regions) throws Exception {
        java.util.concurrent.atomic.AtomicLong now = new java.util.concurrent.atomic.AtomicLong();
        dev.cohort.runtime.WaitPolicy.Clock stepped = new dev.cohort.runtime.WaitPolicy.Clock() {
            @Override
            public long nanoTime() {
                return now.addAndGet(1_000_000);
            }

            @Override
            public void park(long nanos) {
                now.addAndGet(nanos);
            }
        };
        List<String> logged = java.util.Collections.synchronizedList(new ArrayList<>());
        System.Logger.Level[] level = new System.Logger.Level[1];
        java.util.logging.Logger log = java.util.logging.Logger.getLogger(SpinBarrier.class.getName());
        java.util.logging.Handler capture = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord record) {
                logged.add(record.getMessage() + " @" + now.get());
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        log.addHandler(capture);
        try {
            SpinBarrier zero = new SpinBarrier(
                    regions.get(0).layout(),
                    0,
                    Duration.ofSeconds(2),
                    dev.cohort.runtime.RankNames.PLAIN,
                    1_000,
                    stepped);
            long timeout = Duration.ofSeconds(6).toNanos();
            long start = now.get();
            assertThatThrownBy(() -> zero.await(
                            start + timeout, timeout, barrierContext("shm world rank 0 of 2: barrier #1", 1, 1)))
                    .isInstanceOf(dev.cohort.api.collective.CollectiveTimeoutException.class)
                    .hasMessageContaining("barrier #1: timed out after PT6S waiting for rank(s) [1]");
            assertThat(now.get() - start)
                    .as("failed at the timeout, on the clock")
                    .isBetween(timeout, timeout + 50_000_000L);
            assertThat(logged).singleElement().asString().contains("barrier #1 has waited 2 s; rank(s) [1]");
            long reportedAt = Long.parseLong(logged.get(0).replaceAll(".* @", ""));
            assertThat(reportedAt - start).as("reported at the stall time").isBetween(2_000_000_000L, 2_050_000_000L);
        } finally {
            log.removeHandler(capture);
        }
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aRankThatSleepsWaitingIsWokenByThePeerItWaitsFor() throws Exception {
        Assumptions.assumeTrue(Futex.AVAILABLE, "futexes are Linux's");
        onRegions("futex", 2, ShmThreadsTest::peerWakesSleeper);
    }

    private static void peerWakesSleeper(List<ShmAttachment> regions) throws Exception {
        ExecutorService waiter = Executors.newSingleThreadExecutor();
        try {
            SpinBarrier.Context barrier = barrierContext("shm world rank 1 of 2: barrier #1", 1, 1);
            // Rank 1's sleeps would last 30 s unless rank 0 woke it.
            SpinBarrier one = new SpinBarrier(
                    regions.get(1).layout(),
                    1,
                    Duration.ofSeconds(50),
                    dev.cohort.runtime.RankNames.PLAIN,
                    Duration.ofSeconds(30).toNanos());
            SpinBarrier zero = new SpinBarrier(
                    regions.get(0).layout(), 0, Duration.ofSeconds(50), dev.cohort.runtime.RankNames.PLAIN);
            long timeout = Duration.ofSeconds(55).toNanos();
            Future<Long> waited = waiter.submit(() -> {
                one.await(System.nanoTime() + timeout, timeout, barrier);
                return System.nanoTime();
            });
            ShmLayout layout = regions.get(0).layout();
            long until = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while ((long) ShmLayout.LONG.getVolatile(layout.memory(), layout.sleepersOffset(0)) == 0) {
                assertThat(System.nanoTime() - until)
                        .as("rank 1 sleeps waiting for rank 0")
                        .isNegative();
                Thread.onSpinWait();
            }
            long entered = System.nanoTime();
            zero.await(entered + timeout, timeout, barrier);
            long woke = waited.get(25, TimeUnit.SECONDS);
            assertThat(Duration.ofNanos(woke - entered)).isLessThan(Duration.ofSeconds(10));
            assertThat((long) ShmLayout.LONG.getVolatile(layout.memory(), layout.sleepersOffset(0)))
                    .isZero();
        } finally {
            waiter.shutdownNow();
        }
    }

    /** What a test does with the attached regions of its ranks. */
    @FunctionalInterface
    private interface RegionsTest {
        void run(List<ShmAttachment> regions) throws Exception;
    }

    /**
     * Runs {@code test} over the regions of {@code ranks} ranks of a run named after {@code what},
     * closes them, and checks that nothing of the run is left in /dev/shm.
     */
    private static void onRegions(String what, int ranks, RegionsTest test) throws Exception {
        String run = what + "-" + ProcessHandle.current().pid();
        List<ShmAttachment> regions = attachRegions(run, ranks);
        try {
            test.run(regions);
        } finally {
            regions.forEach(ShmAttachment::close);
        }
        assertThat(ShmProcessesTest.leftovers(run)).isEmpty();
    }

    /** The regions of a group of {@code ranks} ranks (4 KiB of data each), attached on a thread per rank. */
    private static List<ShmAttachment> attachRegions(String run, int ranks) throws Exception {
        return onRanks(
                ranks,
                r -> ShmAttachment.attach(
                        SharedMemoryFiles.path(env(run, r, ranks, ranks)),
                        r,
                        new ShmLayout(ranks, 4096, 0),
                        Duration.ofSeconds(20),
                        "rank " + r));
    }

    /** What a barrier's waiting rank says it was doing, for a barrier driven by hand. */
    private static SpinBarrier.Context barrierContext(String describe, long sequence, long tag) {
        return new SpinBarrier.Context() {
            @Override
            public String describe() {
                return describe;
            }

            @Override
            public boolean closed() {
                return false;
            }

            @Override
            public long sequence() {
                return sequence;
            }

            @Override
            public long tag() {
                return tag;
            }

            @Override
            public dev.cohort.api.collective.Collective collective() {
                return null;
            }
        };
    }
}
