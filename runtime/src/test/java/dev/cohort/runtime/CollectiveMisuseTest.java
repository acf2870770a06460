package dev.cohort.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.cohort.api.collective.CollectiveMismatchException;
import dev.cohort.api.collective.CollectiveTimeoutException;
import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.OpKind;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.api.collective.Work;
import dev.cohort.runtime.threads.ThreadsWorld;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 30, unit = TimeUnit.SECONDS)
class CollectiveMisuseTest {

    private final ProcessGroup solo = new ThreadsWorld(1).group(0);

    @Test
    void nullAndReadOnlyOutputsAreRejected() {
        assertThatThrownBy(() -> solo.allreduce(null, ReduceOp.SUM))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining("allreduce: data buffer is null");
        DenseBuffer readOnly = DenseBuffer.of(FloatBuffer.wrap(new float[4]).asReadOnlyBuffer());
        assertThatThrownBy(() -> solo.allreduce(readOnly, ReduceOp.SUM))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("read-only");
        assertThatThrownBy(() -> solo.allgather(DenseBuffer.of(new float[1]), readOnly))
                .hasMessageContaining("output buffer float32[4] (read-only) is read-only");
        assertThatThrownBy(() -> solo.allreduce(DenseBuffer.of(new float[1]), null))
                .hasMessageContaining("reduce op is null");
    }

    @Test
    void wrongLengthsAndTypesAreRejected() {
        assertThatThrownBy(() -> solo.allgather(DenseBuffer.of(new float[3]), DenseBuffer.of(new float[4])))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("1 x 3 = 3 elements, got 4");
        assertThatThrownBy(() -> solo.allgather(DenseBuffer.of(new float[3]), DenseBuffer.of(new double[3])))
                .hasMessageContaining("input is float32 but output is float64");
        assertThatThrownBy(
                        () -> solo.reduceScatter(DenseBuffer.of(new int[5]), DenseBuffer.of(new int[4]), ReduceOp.SUM))
                .hasMessageContaining("input must hold world size x output");
        assertThatThrownBy(
                        () -> solo.allgatherv(DenseBuffer.of(new int[2]), DenseBuffer.of(new int[2]), new int[] {2, 0}))
                .hasMessageContaining("one entry per rank");
        assertThatThrownBy(() -> solo.allgatherv(DenseBuffer.of(new int[2]), DenseBuffer.of(new int[2]), new int[] {3}))
                .hasMessageContaining("counts[0] (this rank) is 3 but the input holds 2");
    }

    @Test
    void rootOutOfRangeAndBadTimeoutsAreRejected() {
        assertThatThrownBy(() -> solo.broadcast(DenseBuffer.of(new long[1]), 1))
                .hasMessageContaining("root must be in [0, 1), got 1");
        assertThatThrownBy(() -> solo.broadcast(DenseBuffer.of(new long[1]), -1))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> solo.withTimeout(Duration.ZERO)).hasMessageContaining("timeout must be positive");
        assertThatThrownBy(() -> solo.withTimeout(Duration.ofSeconds(-1)))
                .hasMessageContaining("timeout must be positive");
        assertThatThrownBy(() -> solo.barrier().await(Duration.ZERO)).hasMessageContaining("timeout must be positive");
    }

    @Test
    void directBuffersMustBeInNativeOrder() {
        ByteOrder other =
                ByteOrder.nativeOrder() == ByteOrder.BIG_ENDIAN ? ByteOrder.LITTLE_ENDIAN : ByteOrder.BIG_ENDIAN;
        assertThatThrownBy(() -> DenseBuffer.of(
                        ByteBuffer.allocateDirect(16).order(other).asFloatBuffer()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("native byte order");
        assertThatThrownBy(() -> DenseBuffer.of(ByteBuffer.allocateDirect(6), DataType.INT32))
                .hasMessageContaining("multiple of 4 bytes");
    }

    @Test
    void callsAfterCloseAreRejected() {
        ProcessGroup group = new ThreadsWorld(1).group(0);
        group.close();
        assertThatThrownBy(group::barrier)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
    }

    @Test
    void ranksThatDisagreeAllFailAndNothingIsWritten() {
        onRanks(3, (g, rank) -> {
            float[] data = {rank};
            Work w = rank == 2 ? g.broadcast(DenseBuffer.of(data), 0) : g.allreduce(DenseBuffer.of(data), ReduceOp.SUM);
            assertThatThrownBy(w::await)
                    .isInstanceOf(CollectiveMismatchException.class)
                    .hasMessageContaining("rank 0: allreduce float32[1] SUM")
                    .hasMessageContaining("rank 2: broadcast float32[1] root=0");
            assertThat(data[0]).isEqualTo(rank);
            assertThatThrownBy(() -> g.barrier().await()).isInstanceOf(CollectiveMismatchException.class);
        });
    }

    @Test
    void differentLengthsAreAMismatch() {
        onRanks(
                2,
                (g, rank) -> assertThatThrownBy(() -> g.allreduce(DenseBuffer.of(new double[rank + 1]), ReduceOp.MAX)
                                .await())
                        .isInstanceOf(CollectiveMismatchException.class)
                        .hasMessageContaining("float64[1]")
                        .hasMessageContaining("float64[2]"));
    }

    /** What one rank does with its group. */
    @FunctionalInterface
    private interface RankBody {
        void run(ProcessGroup group, int rank);
    }

    /** Runs {@code body} on {@code n} thread ranks of one group (10 s timeout), each with its group and rank. */
    private static void onRanks(int n, RankBody body) {
        ThreadsWorld world = new ThreadsWorld(n, n, Duration.ofSeconds(10));
        world.runAll(
                rank -> {
                    body.run(world.group(rank), rank);
                    return null;
                },
                Duration.ofSeconds(20));
    }

    @Test
    void aRankThatNeverJoinsIsNamedWhenTheTimeoutExpires() {
        ThreadsWorld world = new ThreadsWorld(3, 3, Duration.ofMillis(300));
        long start = System.nanoTime();
        world.runAll(
                rank -> {
                    if (rank != 1) {
                        assertThatThrownBy(() -> world.group(rank)
                                        .allreduce(DenseBuffer.of(new int[4]), ReduceOp.SUM)
                                        .await())
                                .isInstanceOf(CollectiveTimeoutException.class)
                                .hasMessageContaining("allreduce #0")
                                .hasMessageContaining("rank(s) [1] never joined")
                                .satisfies(e -> {
                                    // The same facts as fields, for programs (the first rank to time out breaks the
                                    // exchange for all, with its own rank).
                                    CollectiveTimeoutException t = (CollectiveTimeoutException) e;
                                    assertThat(t.rank().getAsInt()).isIn(0, 2);
                                    assertThat(t.peers()).containsExactly(1);
                                    assertThat(t.collective()).hasValueSatisfying(c -> {
                                        assertThat(c.kind()).isEqualTo(OpKind.ALLREDUCE);
                                        assertThat(c.sequence()).isZero();
                                    });
                                });
                    }
                    return null;
                },
                Duration.ofSeconds(20));
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
    }

    @Test
    void aShortAwaitLeavesTheOperationPending() {
        ThreadsWorld world = new ThreadsWorld(2, 2, Duration.ofSeconds(10));
        ProcessGroup g0 = world.group(0);
        Work w = g0.barrier();
        assertThatThrownBy(() -> w.await(Duration.ofMillis(50)))
                .isInstanceOf(CollectiveTimeoutException.class)
                .hasMessageContaining("still running");
        assertThat(w.isDone()).isFalse();
        world.group(1).barrier().await();
        w.await();
        assertThat(w.isDone()).isTrue();
        assertThat(w.failure()).isEmpty();
    }
}
