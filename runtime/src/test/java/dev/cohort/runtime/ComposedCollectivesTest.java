package dev.cohort.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.CollectiveMismatchException;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.OpKind;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.api.collective.Work;
import dev.cohort.runtime.threads.ThreadsWorld;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Composed collectives on a group that runs only the five core kinds (as hier across hosts): they
 * give the same results, and ranks that issue different composed calls whose parts look alike (a
 * reduce and an allreduce, gathers to different roots) fail on every rank.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ComposedCollectivesTest {

    /** A group that runs the core kinds on a threads group and composes the rest. */
    private static final class CoreOnly extends AbstractProcessGroup {
        private final ProcessGroup inner;

        CoreOnly(ProcessGroup inner) {
            super(inner.rank(), inner.size(), inner.timeout());
            this.inner = inner;
        }

        @Override
        protected boolean runsNatively(OpKind kind) {
            return kind.isCore();
        }

        @Override
        protected Work start(Collective call, Duration timeout) {
            return Reissue.on(inner.withTimeout(timeout), call);
        }

        @Override
        protected void release() {
            inner.close();
        }
    }

    /** What each of 3 ranks gets from {@code call}: its message when it fails, else "ok". */
    private static List<String> onThreeRanks(BiFunction<ProcessGroup, Integer, Work> call) {
        ThreadsWorld world = new ThreadsWorld(3, 3, Duration.ofSeconds(20));
        return ThreadsWorld.run(3, rank -> {
            try (ProcessGroup g = new CoreOnly(world.group(rank))) {
                call.apply(g, rank).await();
                return "ok";
            } catch (CollectiveMismatchException e) {
                return e.getMessage();
            }
        });
    }

    @Test
    void aComposedReduceStillReducesToTheRoot() {
        List<String> results = onThreeRanks((g, rank) -> {
            DenseBuffer data = DenseBuffer.of(new float[] {rank, 1});
            Work w = g.reduce(data, ReduceOp.SUM, 1);
            w.await();
            if (rank == 1) {
                assertThat(data.getDouble(0)).isEqualTo(3.0);
                assertThat(data.getDouble(1)).isEqualTo(3.0);
            }
            return w;
        });
        assertThat(results).containsOnly("ok");
    }

    @Test
    void aReduceBesideAnAllreduceFailsOnEveryRank() {
        List<String> results = onThreeRanks((g, rank) -> {
            DenseBuffer data = DenseBuffer.of(new float[4]);
            return rank == 2 ? g.allreduce(data, ReduceOp.SUM) : g.reduce(data, ReduceOp.SUM, 0);
        });
        assertThat(results).noneMatch("ok"::equals);
    }

    @Test
    void gathersToDifferentRootsFailOnEveryRankNamingEachRanksCall() {
        List<String> results = onThreeRanks(
                (g, rank) -> g.gather(DenseBuffer.of(new float[2]), DenseBuffer.of(new float[6]), rank == 2 ? 1 : 0));
        assertThat(results)
                .allSatisfy(message -> assertThat(message)
                        .contains("the ranks issued different collectives")
                        .contains("ranks [0, 1]: gather float32[2] root=0")
                        .contains("rank 2: gather float32[2] root=1"));
    }

    @Test
    void agreeingSignaturesHaveNoDisagreement() {
        long[] every = new long[2 * SignatureWords.WORDS];
        Collective call = new Collective(OpKind.BARRIER, 7, null, null, null, -1, null);
        SignatureWords.encode(call, every, 0);
        SignatureWords.encode(call, every, SignatureWords.WORDS);
        assertThat(ComposedCollectives.disagreement(every, 2)).isNull();
        every[SignatureWords.WORDS + 3] = 8;
        assertThat(ComposedCollectives.disagreement(every, 2))
                .isEqualTo("rank 0: barrier (call 7); rank 1: barrier (call 8)");
    }
}
