package dev.cohort.gloo;

import dev.cohort.api.collective.CollectiveMismatchException;
import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.collective.ReduceOp;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

/**
 * A worker of {@code GlooConsistencyTest}: for each case, one group (its own store port, given in
 * {@code args}) where the ranks issue disagreeing collectives after one agreeing allreduce. Prints
 * {@code CASE <name> MISMATCH <ms> <message>} when the disagreement fails as a mismatch and the next
 * call is refused, else {@code CASE <name> WRONG ...}.
 */
public final class GlooMismatchWorker {

    /** A disagreement: what rank {@code rank} of {@code size} calls. */
    interface Case {
        void call(ProcessGroup g, int rank) throws Exception;
    }

    static final Map<String, Case> CASES = new java.util.LinkedHashMap<>();

    static {
        CASES.put("kind", (g, r) -> {
            float[] x = {r};
            (r == 2 ? g.broadcast(DenseBuffer.of(x), 0) : g.allreduce(DenseBuffer.of(x), ReduceOp.SUM)).await();
        });
        CASES.put(
                "length",
                (g, r) -> g.allreduce(DenseBuffer.of(new float[r == 1 ? 1025 : 1024]), ReduceOp.SUM)
                        .await());
        CASES.put(
                "type",
                (g, r) -> (r == 1
                                ? g.allreduce(DenseBuffer.of(new double[8]), ReduceOp.SUM)
                                : g.allreduce(DenseBuffer.of(new float[8]), ReduceOp.SUM))
                        .await());
        CASES.put(
                "op",
                (g, r) -> g.allreduce(DenseBuffer.of(new int[4]), r == 0 ? ReduceOp.MAX : ReduceOp.SUM)
                        .await());
        CASES.put(
                "root",
                (g, r) ->
                        g.broadcast(DenseBuffer.of(new long[4]), r == 2 ? 1 : 0).await());
        CASES.put("order", (g, r) -> {
            float[] x = new float[16];
            if (r == 1) {
                g.broadcast(DenseBuffer.of(x), 0).await();
                g.allreduce(DenseBuffer.of(x), ReduceOp.SUM).await();
            } else {
                g.allreduce(DenseBuffer.of(x), ReduceOp.SUM).await();
                g.broadcast(DenseBuffer.of(x), 0).await();
            }
        });
        CASES.put(
                "empty",
                (g, r) -> g.allreduce(DenseBuffer.of(new float[r == 0 ? 0 : 3]), ReduceOp.SUM)
                        .await());
        // Large direct buffers travel over the peer mesh straight from and into the caller's
        // memory: a disagreement must leave that memory as it was.
        CASES.put("root-untouched", (g, r) -> {
            DenseBuffer data = marked(r);
            try {
                g.broadcast(data, r == 2 ? 1 : 0).await();
            } finally {
                assertMarked(data, r);
            }
        });
        CASES.put("op-untouched", (g, r) -> {
            DenseBuffer data = marked(r);
            try {
                g.allreduce(data, r == 1 ? ReduceOp.MIN : ReduceOp.SUM).await();
            } finally {
                assertMarked(data, r);
            }
        });
        CASES.put("allgatherv", (g, r) -> {
            int[] counts = r == 0 ? new int[] {1, 2, 3} : new int[] {1, 3, 2};
            int total = 6;
            g.allgatherv(DenseBuffer.of(new float[counts[r]]), DenseBuffer.of(new float[total]), counts)
                    .await();
        });
        CASES.put(
                "gather-root",
                (g, r) -> g.gather(DenseBuffer.of(new float[2]), DenseBuffer.of(new float[6]), r == 2 ? 1 : 0)
                        .await());
        CASES.put("alltoallv", (g, r) -> {
            // what rank i sends to j: 1 + i + j; rank 1 expects 9 from rank 0 instead of 2
            int[] send = new int[3];
            int[] receive = new int[3];
            for (int j = 0; j < 3; j++) {
                send[j] = 1 + r + j;
                receive[j] = r == 1 && j == 0 ? 9 : 1 + j + r;
            }
            DenseBuffer output = DenseBuffer.allocateDirect(
                    DataType.FLOAT32, java.util.Arrays.stream(receive).sum());
            g.alltoallv(DenseBuffer.of(new float[java.util.Arrays.stream(send).sum()]), send, output, receive)
                    .await();
        });
    }

    private static final int MARKED_COUNT = 1 << 20;

    /** 4 MiB of direct memory, every element {@code rank + 0.5}. */
    private static DenseBuffer marked(int rank) {
        DenseBuffer data = DenseBuffer.allocateDirect(DataType.FLOAT32, MARKED_COUNT);
        for (int i = 0; i < MARKED_COUNT; i++) {
            data.setDouble(i, rank + 0.5);
        }
        return data;
    }

    private static void assertMarked(DenseBuffer data, int rank) {
        for (int i = 0; i < MARKED_COUNT; i++) {
            if (data.getDouble(i) != rank + 0.5) {
                throw new AssertionError("rank " + rank + ": element " + i + " changed to " + data.getDouble(i)
                        + " by a call the ranks disagreed on");
            }
        }
    }

    public static void main(String[] args) {
        Map<String, String> env = new HashMap<>(System.getenv());
        int rank = Integer.parseInt(env.get("RANK"));
        int i = 0;
        for (Map.Entry<String, Case> c : CASES.entrySet()) {
            env.put("MASTER_PORT", args[i++]);
            env.put("COHORT_RUN_ID", "mismatch-" + c.getKey());
            GlooOptions options =
                    new GlooOptions().timeout(Duration.ofSeconds(30)).connectTimeout(Duration.ofSeconds(30));
            GlooBackend backend = new GlooBackend(options, env);
            backend.initialize();
            ProcessGroup g = backend.group();
            float[] ok = {1};
            g.allreduce(DenseBuffer.of(ok), ReduceOp.SUM).await();
            long start = System.nanoTime();
            String outcome;
            try {
                c.getValue().call(g, rank);
                outcome = "WRONG no failure";
            } catch (CollectiveMismatchException e) {
                long ms = (System.nanoTime() - start) / 1_000_000;
                try {
                    g.barrier().await();
                    outcome = "WRONG next call accepted";
                } catch (CollectiveMismatchException refused) {
                    outcome = "MISMATCH " + ms + " " + e.getMessage().replace('\n', '|');
                }
            } catch (Exception e) {
                outcome = "WRONG " + e;
            }
            System.out.println("CASE " + c.getKey() + " " + outcome + " (sum " + ok[0] + ")");
            System.out.flush();
            // A group whose ranks disagreed may hold a Gloo operation that never ends: leave it
            // (a real job exits here) instead of waiting for it in close().
        }
        System.out.println("DONE rank " + rank);
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }
}
