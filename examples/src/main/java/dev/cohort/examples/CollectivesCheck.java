package dev.cohort.examples;

import dev.cohort.api.Backends;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.JobEnvironment;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ReduceOp;
import java.time.Duration;
import java.util.Arrays;

/**
 * A plain collectives program, no framework: under any launcher, every rank checks an allreduce,
 * a broadcast, an allgather and both barriers against what they must give, and rank 0 prints one
 * line: {@code collectives ok: 4 workers on gloo, 2 host(s), local rank 0 of 2}. Exit code 1 with the
 * difference when a result is wrong.
 */
public final class CollectivesCheck {

    private static final Duration TIMEOUT = Duration.ofMinutes(2);

    private CollectivesCheck() {}

    public static void main(String[] args) {
        try (DistributedBackend backend = Backends.select(null)) {
            backend.initialize();
            int n = backend.worldSize();
            int rank = backend.rank();
            long[] sum = {rank + 1, 1};
            backend.group().allreduce(DenseBuffer.of(sum), ReduceOp.SUM).await(TIMEOUT);
            expect("allreduce", sum, new long[] {(long) n * (n + 1) / 2, n});
            long[] root = {rank == 0 ? 42 : -1};
            backend.group().broadcast(DenseBuffer.of(root), 0).await(TIMEOUT);
            expect("broadcast", root, new long[] {42});
            long[] all = new long[n];
            backend.group()
                    .allgather(DenseBuffer.of(new long[] {rank}), DenseBuffer.of(all))
                    .await(TIMEOUT);
            long[] ranks = new long[n];
            Arrays.setAll(ranks, r -> r);
            expect("allgather", all, ranks);
            backend.localBarrier();
            backend.group().barrier().await(TIMEOUT);
            if (backend.isRootWorker()) {
                System.out.println("collectives ok: " + n + " workers on " + backend.name() + ", local rank "
                        + backend.localRank() + " of " + backend.localWorldSize());
            }
        } catch (RuntimeException e) {
            JobEnvironment.recordFailure(e);
            System.err.println("collectives check: " + e.getMessage());
            System.exit(1);
        }
    }

    private static void expect(String what, long[] got, long[] want) {
        if (!Arrays.equals(got, want)) {
            throw new IllegalStateException(
                    what + " gave " + Arrays.toString(got) + ", expected " + Arrays.toString(want));
        }
    }
}
