package dev.cohort.shm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.cohort.core.collective.CollectiveMismatchException;
import dev.cohort.core.collective.DenseBuffer;
import dev.cohort.core.collective.ReduceOp;
import dev.cohort.core.conformance.ConformanceSuite;
import dev.cohort.core.env.SharedMemoryFiles;
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
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

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
        String run = "mismatch-" + ProcessHandle.current().pid();
        List<String> errors = onRanks(2, r -> {
            try (ShmBackend b = backend(run, r, 2, new ShmOptions().timeout(Duration.ofSeconds(10)))) {
                b.initialize();
                float[] data = new float[r == 0 ? 8 : 9];
                try {
                    b.group().allreduce(DenseBuffer.of(data), ReduceOp.SUM).await();
                    return "no error";
                } catch (CollectiveMismatchException e) {
                    return e.getMessage();
                }
            }
        });
        assertThat(errors.get(0)).contains("shm world rank 0 of 2: allreduce #0 (float32[8] SUM)").contains("rank 1");
        assertThat(errors.get(1)).contains("rank 0 issued a different collective");
    }

    @Test
    @Timeout(value = 30, unit = TimeUnit.SECONDS)
    void severalHostsAreRefusedWithAPointerToGloo() {
        ShmBackend b = new ShmBackend(new ShmOptions(), env("hosts", 0, 4, 2));
        assertThatThrownBy(b::initialize).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("WORLD_SIZE=4 and LOCAL_WORLD_SIZE=2").hasMessageContaining("gloo");
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aRankWithAnotherWorldSizeIsRefused() throws Exception {
        String run = "size-" + ProcessHandle.current().pid();
        List<String> errors = onRanks(2, r -> {
            try (ShmBackend b = new ShmBackend(new ShmOptions().connectTimeout(Duration.ofSeconds(5)),
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
        String run = "stall-" + ProcessHandle.current().pid();
        List<ShmRegion> regions = onRanks(3, r -> ShmRegion.attach(SharedMemoryFiles.path(env(run, r, 3, 3)), r, 3,
                4096, 0, Duration.ofSeconds(20), "rank " + r));
        try {
            SpinBarrier.Context allreduce3 = new SpinBarrier.Context() {
                @Override public String describe() { return "shm world rank 0 of 3: allreduce #3 (float32[8] SUM)"; }
                @Override public boolean closed() { return false; }
                @Override public long sequence() { return 3; }
                @Override public long tag() { return 0x1234; }
            };
            // Rank 1 published the tag of #1 in #3's slot (it has not started #3); rank 2 published #3's
            // (it started it, in place, and stopped inside).
            ShmRegion.LONG.setRelease(regions.get(1).memory, regions.get(1).tagOffset(1, 3), 0x9876L);
            ShmRegion.LONG.setRelease(regions.get(2).memory, regions.get(2).tagOffset(2, 3), 0x1234L ^ ShmProcessGroup.IN_PLACE);
            String report = new SpinBarrier(regions.get(0), Duration.ofMillis(1500))
                    .reportStall(allreduce3, List.of(1, 2), Duration.ofSeconds(6).toNanos());
            assertThat(report).isEqualTo("cohort: shm world rank 0 of 3: allreduce #3 (float32[8] SUM) has waited 1.5 s; "
                    + "rank(s) [1] have not reached it (stopped, slow or gone?); rank(s) [2] started it but have not "
                    + "reached this step (stopped or slow?); it fails at its timeout (6 s)");
        } finally {
            regions.forEach(ShmRegion::close);
        }
        assertThat(ShmProcessesTest.leftovers(run)).isEmpty();
    }
}
