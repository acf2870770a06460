package dev.cohort.testkit;

import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.collective.ReduceOp;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * Subgroups on any engine: every rank runs {@link #run} on its world group. A data-parallel ×
 * model-parallel grid (rows of consecutive ranks, columns across them, ranked backwards) running
 * the small conformance suite in both directions at once; {@code newGroup} in a given order; a
 * split that leaves ranks out; a subgroup of a subgroup; and lists that disagree, refused on every
 * rank with the parent still usable.
 */
public final class SubgroupSuite extends RankChecks {

    private final ProcessGroup world;

    private SubgroupSuite(ProcessGroup world) {
        super(world);
        this.world = world;
    }

    /**
     * Runs every case.
     *
     * @return the number of checks made
     */
    public static int run(ProcessGroup world) throws Exception {
        SubgroupSuite suite = new SubgroupSuite(world);
        suite.grid();
        suite.ordered();
        suite.leftOut();
        suite.disagreeing();
        world.barrier().await();
        return suite.checks();
    }

    /** Rows of two consecutive ranks and columns across them: both run the suite at once. */
    private void grid() throws Exception {
        int width = 2;
        ProcessGroup row = world.split(rank / width, rank).orElseThrow();
        check("row size", row.size(), Math.min(width, n - rank / width * width));
        check("row rank", row.rank(), rank % width);
        check("row sum of ranks", sumOfRanks(row), rowSum(rank / width, width));
        ProcessGroup column = world.split(rank % width, -rank).orElseThrow();
        ExecutorService both = Executors.newFixedThreadPool(2);
        try {
            List<Future<Integer>> runs = new ArrayList<>();
            runs.add(both.submit(() -> ConformanceSuite.run(row, false)));
            int members = (n - rank % width + width - 1) / width;
            check("column size", column.size(), members);
            check("column rank (ranked backwards)", column.rank(), members - 1 - rank / width);
            runs.add(both.submit(() -> ConformanceSuite.run(column, false)));
            for (Future<Integer> r : runs) {
                counted(r.get(600, TimeUnit.SECONDS));
            }
            Optional<ProcessGroup> nested = row.split(0, -row.rank());
            ProcessGroup inner = nested.orElseThrow();
            check("rank in a subgroup of a subgroup", inner.rank(), row.size() - 1 - row.rank());
            check("sum in a subgroup of a subgroup", sumOfRanks(inner), rowSum(rank / width, width));
            inner.close();
        } finally {
            both.shutdownNow();
            row.close();
            column.close();
        }
    }

    /** newGroup of the last rank and the first, in that order: the last is rank 0 there. */
    private void ordered() {
        if (n < 2) {
            return;
        }
        int later = n - 1;
        Optional<ProcessGroup> pair = world.newGroup(later, 0);
        check("newGroup membership", pair.isPresent(), rank == later || rank == 0);
        if (pair.isPresent()) {
            ProcessGroup g = pair.get();
            check("newGroup rank", g.rank(), rank == later ? 0 : 1);
            long[] value = {rank};
            g.broadcast(DenseBuffer.of(value), 0).await();
            check("newGroup broadcast from its rank 0", value[0], (long) later);
            g.close();
        }
    }

    /** A split whose negative color leaves rank 0 out. */
    private void leftOut() {
        boolean in = rank != 0;
        Optional<ProcessGroup> g = world.split(in ? 7 : -1, 0);
        check("left out", g.isPresent(), in);
        if (g.isPresent()) {
            check("size without rank 0", g.get().size(), n - 1);
            long[] one = {1};
            g.get().allreduce(DenseBuffer.of(one), ReduceOp.SUM).await();
            check("sum without rank 0", one[0], (long) n - 1);
            g.get().close();
        }
    }

    /** Lists that differ: every rank refuses, and the parent goes on. */
    private void disagreeing() {
        if (n < 2) {
            return;
        }
        try {
            world.newGroup(rank == 0 ? new int[] {0, 1} : new int[] {1, 0});
            throw new AssertionError("rank " + rank + ": newGroup with lists that differ was not refused");
        } catch (IllegalArgumentException expected) {
            check("refusal names the other lists", expected.getMessage().contains("passed other ranks"), true);
        }
        long[] one = {1};
        world.allreduce(DenseBuffer.of(one), ReduceOp.SUM).await();
        check("the parent after a refused newGroup", one[0], (long) n);
    }

    private long sumOfRanks(ProcessGroup g) {
        long[] mine = {rank};
        g.allreduce(DenseBuffer.of(mine), ReduceOp.SUM).await();
        return mine[0];
    }

    private long rowSum(int row, int width) {
        long s = 0;
        for (int r = row * width; r < Math.min(n, (row + 1) * width); r++) {
            s += r;
        }
        return s;
    }
}
