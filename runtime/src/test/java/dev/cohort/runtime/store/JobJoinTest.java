package dev.cohort.runtime.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.cohort.api.Topology;
import dev.cohort.api.collective.JoinException;
import dev.cohort.runtime.HostIdentity;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The one join protocol: ranks as threads over one in-memory store. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class JobJoinTest {

    /** Long enough that a test that ends well never reaches it: failures must come from another rank's note. */
    private static final Duration LONG = Duration.ofSeconds(60);

    private final InMemoryStore store = new InMemoryStore();
    /** A thread per rank (the common pool may run one task at a time on a small machine). */
    private final ExecutorService ranks = Executors.newCachedThreadPool();

    @AfterEach
    void stopRanks() {
        ranks.shutdownNow();
    }

    private JobJoin joinWith(Duration linger) {
        return new JobJoin(store, "the test store", new JobJoin.Linger(linger, () -> 0));
    }

    private static JobJoin.Newcomer rank(int rank, int world, String run, String joinsAs) {
        return new JobJoin.Newcomer(
                new Topology(rank, world, 0, 1, rank), run, joinsAs, "10.0.0." + rank, "rank " + rank + " of " + world);
    }

    /** Joins every newcomer on its own thread, each with {@code timeout}; their results or failures, by rank. */
    private List<CompletableFuture<JobJoin.Members>> joinAll(Duration timeout, JobJoin.Newcomer... newcomers) {
        List<CompletableFuture<JobJoin.Members>> all = new ArrayList<>();
        for (JobJoin.Newcomer n : newcomers) {
            all.add(CompletableFuture.supplyAsync(
                    () -> joinWith(Duration.ZERO).join(n, System.nanoTime() + timeout.toNanos(), timeout), ranks));
        }
        return all;
    }

    private static JoinException failure(CompletableFuture<JobJoin.Members> f) throws Exception {
        try {
            f.get(20, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            assertThat(e.getCause()).isInstanceOf(JoinException.class);
            return (JoinException) e.getCause();
        }
        throw new AssertionError("the join succeeded");
    }

    @Test
    void ranksThatAgreeLearnEachOthersAddressesAndHosts() throws Exception {
        List<CompletableFuture<JobJoin.Members>> joins =
                joinAll(LONG, rank(0, 3, "r/0", "tcp"), rank(1, 3, "r/0", "tcp"), rank(2, 3, "r/0", "tcp"));
        for (CompletableFuture<JobJoin.Members> f : joins) {
            JobJoin.Members m = f.get(20, TimeUnit.SECONDS);
            assertThat(m.addresses()).containsExactly("10.0.0.0", "10.0.0.1", "10.0.0.2");
            assertThat(m.hosts()).containsOnly(HostIdentity.current()).hasSize(3);
        }
        assertThat(joins.get(1).get().ranksByAddress(1)).isEqualTo(Map.of("10.0.0.0", "0", "10.0.0.2", "2"));
    }

    @Test
    void ranksThatDisagreeOnTheWorldSizeAreBothToldAtOnce() throws Exception {
        List<CompletableFuture<JobJoin.Members>> joins =
                joinAll(LONG, rank(0, 2, "r/0", "tcp"), rank(1, 3, "r/0", "tcp"));
        assertThat(failure(joins.get(1)))
                .hasMessage("rank 1 of 3: rank 0 was started with WORLD_SIZE=2 but this rank with WORLD_SIZE=3; "
                        + "start every rank with the same WORLD_SIZE");
        assertThat(failure(joins.get(0)))
                .hasMessageStartingWith("rank 0 of 2: gave up meeting at the test store because another process did: ")
                .hasMessageContaining("rank 1 of 3: rank 0 was started with WORLD_SIZE=2");
    }

    @Test
    void ranksThatRunAnotherBackendAreToldWhichOne() throws Exception {
        List<CompletableFuture<JobJoin.Members>> joins =
                joinAll(LONG, rank(0, 2, "r/0", "gloo"), rank(1, 2, "r/0", "tcp"));
        JoinException e = failure(joins.get(1));
        assertThat(e)
                .hasMessageContaining("rank 0 runs gloo (2 ranks) but this process runs tcp (2 ranks)")
                .hasMessageContaining("every process of a job must run the same backend");
        assertThat(e.peers()).containsExactly(0);
        failure(joins.get(0));
    }

    @Test
    void ranksOfAnotherRunAreToldAndSoAreTheirs() throws Exception {
        List<CompletableFuture<JobJoin.Members>> joins =
                joinAll(LONG, rank(0, 2, "job-a/0", "tcp"), rank(1, 2, "job-b/0", "tcp"));
        assertThat(failure(joins.get(1)))
                .hasMessageContaining("rank 0 belongs to run 'job-a/0' but this rank to 'job-b/0'");
        assertThat(failure(joins.get(0))).hasMessageContaining("because another process did");
    }

    @Test
    void twoProcessesClaimingOneRankAreToldSo() throws Exception {
        List<CompletableFuture<JobJoin.Members>> joins =
                joinAll(LONG, rank(0, 2, "r/0", "tcp"), rank(1, 2, "r/0", "tcp"), rank(1, 2, "r/0", "tcp"));
        List<String> messages = new ArrayList<>();
        for (CompletableFuture<JobJoin.Members> f : joins.subList(1, 3)) {
            try {
                f.get(20, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                messages.add(e.getCause().getMessage());
            }
        }
        assertThat(messages).anyMatch(m -> m.contains("another process already joined run 'r/0' as RANK=1"));
    }

    @Test
    void aLateComerIsToldThatTheOthersGaveUp() throws Exception {
        List<CompletableFuture<JobJoin.Members>> joins =
                joinAll(LONG, rank(0, 3, "r/0", "tcp"), rank(1, 2, "r/0", "tcp"));
        failure(joins.get(0));
        failure(joins.get(1));
        assertThatThrownBy(() -> joinWith(Duration.ZERO).join(rank(2, 3, "r/0", "tcp"), System.nanoTime(), LONG))
                .isInstanceOf(JoinException.class)
                .hasMessageContaining("rank 2 of 3: the other processes at the test store had already given up");
    }

    @Test
    void missingRanksAreNamedAtTheDeadline() throws Exception {
        Duration timeout = Duration.ofMillis(200);
        JoinException e = failure(joinAll(timeout, rank(0, 3, "r/0", "tcp")).get(0));
        assertThat(e)
                .hasMessageStartingWith("rank 0 of 3: rank(s) [1, 2] did not join at the test store within PT0.2S");
        assertThat(e.peers()).containsExactly(1, 2);
    }

    @Test
    void rankZeroLingersForLateComersButNotPastItsDeadline() {
        SteppedClock clock = new SteppedClock();
        JobJoin join = new JobJoin(store, "the test store", new JobJoin.Linger(Duration.ofSeconds(10), () -> 0), clock);
        long start = clock.nanoTime();
        // Alone in a world of two: it gives up at its deadline, 1 s off, where its linger ends too.
        assertThatThrownBy(() -> join.join(rank(0, 2, "r/0", "tcp"), start + 1_000_000_000L, LONG))
                .hasMessageContaining("rank(s) [1] did not join");
        assertThat(clock.nanoTime() - start).isBetween(1_000_000_000L, 1_100_000_000L);
    }

    @Test
    void rankZeroLingersItsWholeLingerForRanksStillToCome() {
        SteppedClock clock = new SteppedClock();
        JobJoin join = new JobJoin(store, "the test store", new JobJoin.Linger(Duration.ofSeconds(10), () -> 0), clock);
        store.set("cohort/r/0/rendezvous-failed", "rank 1 of 2: something was wrong");
        long start = clock.nanoTime();
        assertThatThrownBy(() -> join.join(rank(0, 2, "r/0", "tcp"), start + LONG.toNanos(), LONG))
                .hasMessage("rank 0 of 2: the other processes at the test store had already given up: "
                        + "rank 1 of 2: something was wrong");
        assertThat(clock.nanoTime() - start).isBetween(10_000_000_000L, 10_100_000_000L);
    }

    @Test
    void rankZeroStopsLingeringOnceEveryoneCameAndLeft() throws Exception {
        // Rank 1 came, found the job of an earlier rank 0 that runs gloo, and left.
        store.set(JobJoin.JOB, "gloo|2|r/0");
        assertThat(failure(joinAll(LONG, rank(1, 2, "r/0", "tcp")).get(0))).hasMessageContaining("rank 0 runs gloo");
        SteppedClock clock = new SteppedClock();
        JobJoin join = new JobJoin(store, "the test store", new JobJoin.Linger(Duration.ofSeconds(10), () -> 0), clock);
        long start = clock.nanoTime();
        assertThatThrownBy(() -> join.join(rank(0, 2, "r/0", "tcp"), start + LONG.toNanos(), LONG))
                .hasMessageContaining("had already given up");
        assertThat(clock.nanoTime()).isEqualTo(start);
    }

    /**
     * Time that passes only when the code under test sleeps: each sleep moves it on by the time
     * asked for, and yields the CPU a moment to the other ranks' threads.
     */
    private static final class SteppedClock implements JobJoin.Clock {
        private final AtomicLong now = new AtomicLong(1_000);

        @Override
        public long nanoTime() {
            return now.get();
        }

        @Override
        public void sleep(long millis) throws InterruptedException {
            now.addAndGet(millis * 1_000_000);
            Thread.sleep(0, 100_000);
        }
    }
}
