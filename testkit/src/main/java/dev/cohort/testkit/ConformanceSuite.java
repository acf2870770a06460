package dev.cohort.testkit;

import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ObjectCollectives;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.api.collective.Work;
import java.util.ArrayList;
import java.util.List;

/**
 * The engine-neutral conformance suite: every collective, op and data type, on heap and direct
 * buffers, at element counts 0, 1, primes no world size 2..8 divides, and at least 4 Mi; several
 * operations in flight at once. Every rank runs {@link #run} on its own {@link ProcessGroup}
 * (threads or processes alike); ranks issue the same calls in the same order.
 *
 * <p>Inputs are a deterministic function of (case, rank, index), so each rank recomputes every
 * other rank's input and checks its results against a sequential reference in double precision
 * (exact for integers, and exact for float SUM/MIN/MAX/PRODUCT because the values are chosen to be
 * exactly representable through the whole reduction; AVG within one ulp). Large buffers are
 * checked at a deterministic sample of 65,536 elements plus both ends. At the end the ranks
 * compare a hash of all results that must be bit-identical everywhere.
 */
public final class ConformanceSuite extends RankChecks {

    /** At least 4 Mi elements: the large case. */
    public static final int LARGE = 4 * 1024 * 1024 + 3;

    private static final int[] SMALL_COUNTS = {0, 1, 11, 1009};
    private static final int SAMPLE = 65_536;

    private final ProcessGroup group;
    private final boolean includeLarge;
    private long resultHash = 0x9E3779B97F4A7C15L;
    private int caseId;

    private ConformanceSuite(ProcessGroup group, boolean includeLarge) {
        super(group);
        this.group = group;
        this.includeLarge = includeLarge;
    }

    /**
     * Runs every case on this rank; returns the number of checks made.
     *
     * @throws AssertionError naming the case, rank and element when a result is wrong
     */
    public static int run(ProcessGroup group) {
        return run(group, true);
    }

    public static int run(ProcessGroup group, boolean includeLarge) {
        ConformanceSuite suite = new ConformanceSuite(group, includeLarge);
        suite.runAll();
        return suite.checks();
    }

    private void runAll() {
        for (DataType type : DataType.values()) {
            if (type.isHalfPrecision()) {
                halfPrecision(type);
                continue;
            }
            for (int count : SMALL_COUNTS) {
                for (ReduceOp op : ReduceOp.values()) {
                    allreduce(type, count, op, false);
                    allreduce(type, count, op, true);
                    reduceScatter(type, count, op, (count & 1) == 1);
                }
                for (int root = 0; root < n; root++) {
                    broadcast(type, count, root, root % 2 == 1);
                }
                allgather(type, count, false);
                allgather(type, count, true);
                allgatherv(type, count, count % 2 == 0);
                for (ReduceOp op : ReduceOp.values()) {
                    reduce(type, count, op, (op.ordinal() + count) % n, op.ordinal() % 2 == 0);
                }
                rooted(type, count, count % n, count % 2 == 1);
                rooted(type, count, (count + 1) % n, count % 2 == 0);
                alltoall(type, count, count % 2 == 0);
                alltoallv(type, count, count % 2 == 1);
            }
            group.barrier().await();
            if (includeLarge) {
                allreduce(type, LARGE, ReduceOp.SUM, true);
            }
        }
        if (includeLarge) {
            allreduce(DataType.FLOAT32, LARGE, ReduceOp.MAX, false);
            broadcast(DataType.FLOAT32, LARGE, n - 1, true);
            broadcast(DataType.INT64, LARGE, 0, false);
            allgather(DataType.FLOAT32, (LARGE + n - 1) / n, true);
            allgatherv(DataType.INT32, (LARGE + n - 1) / n, false);
            reduceScatter(DataType.FLOAT32, (LARGE + n - 1) / n, ReduceOp.SUM, true);
            reduceScatter(DataType.INT64, (LARGE + n - 1) / n, ReduceOp.MIN, false);
            reduce(DataType.FLOAT32, LARGE, ReduceOp.SUM, n - 1, true);
            reduce(DataType.INT64, LARGE, ReduceOp.MAX, 0, false);
            rooted(DataType.FLOAT32, (LARGE + n - 1) / n, 0, true);
            rooted(DataType.INT32, (LARGE + n - 1) / n, n - 1, false);
            alltoall(DataType.FLOAT32, (LARGE + n * n - 1) / (n * n), true);
            alltoallv(DataType.INT64, (LARGE + n * n - 1) / (n * n), false);
        }
        inFlight();
        objects();
        roundingConsistency();
        group.barrier().await();
        compareHashes();
    }

    // ----- the cases -------------------------------------------------------------------------

    /**
     * The 16-bit floats: every operation, on fewer variants than the other types (they share the
     * engines' byte paths; what differs is the arithmetic, which every op and count here reaches).
     */
    private void halfPrecision(DataType type) {
        for (int count : new int[] {0, 11, 1009}) {
            for (ReduceOp op : ReduceOp.values()) {
                allreduce(type, count, op, (op.ordinal() + count) % 2 == 0);
                reduceScatter(type, count, op, (op.ordinal() + count) % 2 == 1);
            }
            broadcast(type, count, n - 1, count % 2 == 0);
            allgather(type, count, true);
            allgatherv(type, count, false);
            for (ReduceOp op : ReduceOp.values()) {
                reduce(type, count, op, op.ordinal() % n, (op.ordinal() + count) % 2 == 0);
            }
            rooted(type, count, n - 1, count % 2 == 1);
            alltoall(type, count, count % 2 == 0);
            alltoallv(type, count, true);
        }
        group.barrier().await();
    }

    /** Values rather than tensors: bytes (empty ones too) and objects, from the first and last roots. */
    private void objects() {
        for (int root : n == 1 ? new int[] {0} : new int[] {0, n - 1}) {
            String sent = "from rank " + root + " " + "x".repeat(root * 5);
            String got = ObjectCollectives.broadcast(group, rank == root ? sent : null, root);
            check("broadcast of an object from root " + root, got, sent);
        }
        List<String> all = ObjectCollectives.allgather(group, "rank " + rank + " " + "y".repeat(rank * 3));
        for (int r = 0; r < n; r++) {
            check("allgather of objects, rank " + r + "'s", all.get(r), "rank " + r + " " + "y".repeat(r * 3));
        }
        List<int[]> gathered = ObjectCollectives.gather(group, new int[] {rank, rank * rank}, n - 1);
        check("gather of objects to the last rank: how many", gathered.size(), rank == n - 1 ? n : 0);
        for (int r = 0; r < gathered.size(); r++) {
            check(
                    "gather of objects, rank " + r + "'s",
                    java.util.Arrays.toString(gathered.get(r)),
                    java.util.Arrays.toString(new int[] {r, r * r}));
        }
        List<byte[]> bytes = ObjectCollectives.allgatherBytes(group, new byte[rank % 2 == 0 ? 0 : 13 + rank]);
        for (int r = 0; r < n; r++) {
            check("allgather of bytes, rank " + r + "'s length", bytes.get(r).length, r % 2 == 0 ? 0 : 13 + r);
        }
    }

    private void allreduce(DataType type, int count, ReduceOp op, boolean direct) {
        int id = caseId++;
        DenseBuffer data = filled(type, count, direct, id, rank, op);
        group.allreduce(data, op).await();
        String what = "allreduce " + type.label() + "[" + count + "] " + op + (direct ? " direct" : " heap");
        checkReduced(what, data, id, op, 0);
        hash(data);
    }

    private void reduceScatter(DataType type, int block, ReduceOp op, boolean direct) {
        int id = caseId++;
        DenseBuffer input = filled(type, block * n, direct, id, rank, op);
        DenseBuffer output = allocate(type, block, direct);
        group.reduceScatter(input, output, op).await();
        checkReduced("reduce-scatter " + type.label() + "[" + block + " per rank] " + op, output, id, op, rank * block);
    }

    private void broadcast(DataType type, int count, int root, boolean direct) {
        int id = caseId++;
        DenseBuffer data = filled(type, count, direct, id, rank, ReduceOp.SUM);
        group.broadcast(data, root).await();
        String what = "broadcast " + type.label() + "[" + count + "] root " + root;
        forSampled(count, i -> check(what, i, data.getDouble(i), value(type, id, root, i, ReduceOp.SUM), 0));
        hash(data);
    }

    private void allgather(DataType type, int count, boolean direct) {
        int id = caseId++;
        DenseBuffer input = filled(type, count, direct, id, rank, ReduceOp.SUM);
        DenseBuffer output = allocate(type, count * n, direct);
        group.allgather(input, output).await();
        String what = "allgather " + type.label() + "[" + count + " per rank]";
        forSampled(
                count * n,
                i -> check(what, i, output.getDouble(i), value(type, id, i / count, i % count, ReduceOp.SUM), 0));
        hash(output);
    }

    private void allgatherv(DataType type, int base, boolean direct) {
        int id = caseId++;
        int[] counts = new int[n];
        int[] offsets = new int[n];
        int total = 0;
        for (int r = 0; r < n; r++) {
            counts[r] = r % 3 == 1 ? 0 : base + r; // some ranks contribute nothing
            offsets[r] = total;
            total += counts[r];
        }
        DenseBuffer input = filled(type, counts[rank], direct, id, rank, ReduceOp.SUM);
        DenseBuffer output = allocate(type, total, direct);
        group.allgatherv(input, output, counts).await();
        String what = "allgatherv " + type.label() + " counts " + java.util.Arrays.toString(counts);
        int[] owner = new int[total];
        for (int r = 0; r < n; r++) {
            java.util.Arrays.fill(owner, offsets[r], offsets[r] + counts[r], r);
        }
        forSampled(
                total,
                i -> check(
                        what,
                        i,
                        output.getDouble(i),
                        value(type, id, owner[i], i - offsets[owner[i]], ReduceOp.SUM),
                        0));
        hash(output);
    }

    // Results that differ by rank (below) are checked exactly against the reference, not hashed.

    private void reduce(DataType type, int count, ReduceOp op, int root, boolean direct) {
        int id = caseId++;
        DenseBuffer data = filled(type, count, direct, id, rank, op);
        group.reduce(data, op, root).await();
        String what = "reduce " + type.label() + "[" + count + "] " + op + " to root " + root;
        if (rank == root) {
            checkReduced(what, data, id, op, 0);
        } else {
            forSampled(
                    count,
                    i -> check(what + " (a non-root's input)", i, data.getDouble(i), value(type, id, rank, i, op), 0));
        }
    }

    /**
     * Gather, gatherv, scatter and scatterv to and from {@code root}; the v forms with per-rank
     * counts around {@code base}, some of them 0.
     */
    private void rooted(DataType type, int base, int root, boolean direct) {
        int[] counts = new int[n];
        int[] offsets = new int[n + 1];
        for (int r = 0; r < n; r++) {
            counts[r] = (r + root) % 3 == 1 ? 0 : base + r;
            offsets[r + 1] = offsets[r] + counts[r];
        }
        int[] uniform = new int[n + 1];
        for (int r = 0; r < n; r++) {
            uniform[r + 1] = uniform[r] + base;
        }
        for (boolean v : new boolean[] {false, true}) {
            int[] at = v ? offsets : uniform;
            int mine = at[rank + 1] - at[rank];
            String form = v ? "v counts " + java.util.Arrays.toString(counts) : "[" + base + " per rank]";

            int id = caseId++;
            DenseBuffer input = filled(type, mine, direct, id, rank, ReduceOp.SUM);
            DenseBuffer output = rank == root ? allocate(type, at[n], !direct) : null;
            (v ? group.gatherv(input, output, counts, root) : group.gather(input, output, root)).await();
            if (rank == root) {
                String what = "gather" + form + " " + type.label() + " to root " + root;
                int[] owner = owners(at);
                forSampled(
                        at[n],
                        i -> check(
                                what,
                                i,
                                output.getDouble(i),
                                value(type, id, owner[i], i - at[owner[i]], ReduceOp.SUM),
                                0));
            }

            int sid = caseId++;
            DenseBuffer source = rank == root ? filled(type, at[n], direct, sid, root, ReduceOp.SUM) : null;
            DenseBuffer received = allocate(type, mine, !direct);
            (v ? group.scatterv(source, received, counts, root) : group.scatter(source, received, root)).await();
            String what = "scatter" + form + " " + type.label() + " from root " + root;
            forSampled(
                    mine,
                    i -> check(what, i, received.getDouble(i), value(type, sid, root, at[rank] + i, ReduceOp.SUM), 0));
        }
    }

    private int[] owners(int[] offsets) {
        int[] owner = new int[offsets[n]];
        for (int r = 0; r < n; r++) {
            java.util.Arrays.fill(owner, offsets[r], offsets[r + 1], r);
        }
        return owner;
    }

    private void alltoall(DataType type, int block, boolean direct) {
        int id = caseId++;
        DenseBuffer input = filled(type, block * n, direct, id, rank, ReduceOp.SUM);
        DenseBuffer output = allocate(type, block * n, !direct);
        group.alltoall(input, output).await();
        String what = "alltoall " + type.label() + "[" + block + " per pair]";
        forSampled(
                block * n,
                i -> check(
                        what,
                        i,
                        output.getDouble(i),
                        value(type, id, i / block, rank * block + i % block, ReduceOp.SUM),
                        0));
    }

    /** How many elements rank {@code i} sends to rank {@code j} in the all-to-all-v around {@code base}: some 0. */
    private static int pairCount(int base, int i, int j) {
        return (i + 2 * j) % 4 == 3 ? 0 : base + (i * 7 + j * 3) % 11;
    }

    private void alltoallv(DataType type, int base, boolean direct) {
        int id = caseId++;
        int[] send = new int[n];
        int[] receive = new int[n];
        int[] receiveAt = new int[n + 1];
        int sent = 0;
        for (int j = 0; j < n; j++) {
            send[j] = pairCount(base, rank, j);
            receive[j] = pairCount(base, j, rank);
            receiveAt[j + 1] = receiveAt[j] + receive[j];
            sent += send[j];
        }
        DenseBuffer input = filled(type, sent, direct, id, rank, ReduceOp.SUM);
        DenseBuffer output = allocate(type, receiveAt[n], !direct);
        group.alltoallv(input, send, output, receive).await();
        String what = "alltoallv " + type.label() + " around " + base + " per pair";
        int[] owner = owners(receiveAt);
        forSampled(receiveAt[n], i -> {
            int from = owner[i];
            int offsetThere = 0;
            for (int j = 0; j < rank; j++) {
                offsetThere += pairCount(base, from, j);
            }
            check(
                    what + " (from rank " + from + ")",
                    i,
                    output.getDouble(i),
                    value(type, id, from, offsetThere + i - receiveAt[from], ReduceOp.SUM),
                    0);
        });
    }

    /** Several collectives issued before any is awaited, awaited in reverse order. */
    private void inFlight() {
        List<Work> works = new ArrayList<>();
        List<Runnable> checksAfter = new ArrayList<>();
        for (int step = 0; step < 6; step++) {
            int k = step;
            int id = caseId++;
            DataType type = DataType.values()[k % 4];
            int count = 1000 + k;
            DenseBuffer data = filled(type, count, k % 2 == 0, id, rank, ReduceOp.SUM);
            if (k == 3) {
                works.add(group.broadcast(data, k % n));
                checksAfter.add(() -> forSampled(
                        count,
                        i -> check(
                                "in-flight broadcast",
                                i,
                                data.getDouble(i),
                                value(type, id, k % n, i, ReduceOp.SUM),
                                0)));
            } else {
                works.add(group.allreduce(data, ReduceOp.SUM));
                checksAfter.add(() -> checkReduced("in-flight allreduce #" + k, data, id, ReduceOp.SUM, 0));
            }
        }
        works.add(group.barrier());
        for (int k = works.size() - 1; k >= 0; k--) {
            works.get(k).await();
        }
        for (Work w : works) {
            if (!w.isDone() || w.failure().isPresent()) {
                throw new AssertionError("rank " + rank + ": " + w.collective().describe() + " not done after await");
            }
        }
        checksAfter.forEach(Runnable::run);
    }

    /**
     * Float sums whose rounding depends on the order of addition: results need not match the
     * reference exactly, but every rank must hold the same bits (checked by the final hash).
     */
    private void roundingConsistency() {
        int id = caseId++;
        int count = 100_003;
        float[] data = new float[count];
        for (int i = 0; i < count; i++) {
            data[i] = (float) (mix(id, rank, i) * 1e-3 + 1.0 / (rank + 3));
        }
        group.allreduce(DenseBuffer.of(data), ReduceOp.SUM).await();
        for (int i = 0; i < count; i += 997) {
            double ref = 0;
            double abs = 0;
            for (int r = 0; r < n; r++) {
                double v = (float) (mix(id, r, i) * 1e-3 + 1.0 / (r + 3));
                ref += v;
                abs += Math.abs(v);
            }
            check("rounding allreduce float32", i, data[i], ref, 2 * n * Math.ulp((float) abs));
        }
        hash(DenseBuffer.of(data));
    }

    private void compareHashes() {
        long[] all = new long[n];
        group.allgather(DenseBuffer.of(new long[] {resultHash}), DenseBuffer.of(all))
                .await();
        for (int r = 0; r < n; r++) {
            if (all[r] != resultHash) {
                throw new AssertionError("rank " + rank + ": results are not bit-identical across ranks: hash "
                        + Long.toHexString(resultHash) + " here, " + Long.toHexString(all[r]) + " on rank " + r);
            }
        }
        counted(1);
    }

    // ----- inputs and the reference -----------------------------------------------------------

    /**
     * Rank {@code r}'s element {@code i} in case {@code id}: small values exactly representable in
     * every type and whose sums and products over 8 ranks stay exact in float32.
     */
    static double value(DataType type, int id, int r, int i, ReduceOp op) {
        long h = mix(id, r, i);
        if (type.isHalfPrecision()) {
            // Exact in bfloat16's 8 significant bits, and so are the sums and products of 8 of them.
            if (op == ReduceOp.PRODUCT) {
                double[] factors = {-2, -1, -0.5, 0.5, 1, 2};
                return factors[(int) (h % factors.length)];
            }
            return ((int) (h % 65) - 32) / 4.0; // [-8, 8] in quarters
        }
        if (op == ReduceOp.PRODUCT) {
            double[] factors = {-2, -1.5, -1, -0.5, 0.5, 1, 1.5, 2};
            double f = factors[(int) (h & 7)];
            return type.isFloatingPoint() ? f : (f < 0 ? -1 - (h >>> 3 & 1) : 1 + (h >>> 3 & 1));
        }
        int k = (int) (h % 8192) - 4096; // [-4096, 4095]
        return type.isFloatingPoint() ? k / 64.0 : k * 37L + r;
    }

    private static long mix(int id, int r, int i) {
        long z = (id * 0x9E3779B97F4A7C15L) ^ (r * 0xBF58476D1CE4E5B9L) ^ (i * 0x94D049BB133111EBL);
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return (z ^ (z >>> 31)) & Long.MAX_VALUE;
    }

    /** Rank {@code r}'s input of case {@code id}: filled on the heap, then copied in bulk where direct. */
    private DenseBuffer filled(DataType type, int count, boolean direct, int id, int r, ReduceOp op) {
        DenseBuffer heap = DenseBuffer.allocate(type, count);
        for (int i = 0; i < count; i++) {
            heap.setDouble(i, value(type, id, r, i, op));
        }
        if (!direct) {
            return heap;
        }
        DenseBuffer b = DenseBuffer.allocateDirect(type, count);
        b.copyFrom(heap);
        return b;
    }

    private static DenseBuffer allocate(DataType type, int count, boolean direct) {
        return direct ? DenseBuffer.allocateDirect(type, count) : DenseBuffer.allocate(type, count);
    }

    private void checkReduced(String what, DenseBuffer result, int id, ReduceOp op, int offset) {
        DataType type = result.dataType();
        forSampled(result.count(), i -> {
            double ref = value(type, id, 0, offset + i, op);
            for (int r = 1; r < n; r++) {
                double v = value(type, id, r, offset + i, op);
                ref = switch (op) {
                    case SUM, AVG -> ref + v;
                    case PRODUCT -> ref * v;
                    case MIN -> Math.min(ref, v);
                    case MAX -> Math.max(ref, v);
                };
            }
            double tolerance = 0;
            if (op == ReduceOp.AVG) {
                if (type.isFloatingPoint()) {
                    ref = ref / n;
                    tolerance = switch (type) {
                        case FLOAT32 -> Math.ulp((float) ref);
                        // an ulp of the 16-bit format: float32's widened by the mantissa bits it lacks
                        case FLOAT16 -> Math.ulp((float) ref) * (1 << 13);
                        case BFLOAT16 -> Math.ulp((float) ref) * (1 << 16);
                        default -> Math.ulp(ref);
                    };
                } else {
                    ref = (long) ref / n;
                }
            }
            check(what, i, result.getDouble(i), ref, tolerance);
        });
    }

    private void check(String what, int i, double actual, double expected, double tolerance) {
        if (!(Math.abs(actual - expected) <= tolerance)) {
            fail(what + ": element " + i + " is " + actual + ", expected " + expected
                    + (tolerance > 0 ? " +- " + tolerance : ""));
        }
        counted(1);
    }

    /** Every element of small buffers; a sample plus both ends of large ones. */
    private static void forSampled(int count, java.util.function.IntConsumer body) {
        if (count <= 2 * SAMPLE) {
            for (int i = 0; i < count; i++) {
                body.accept(i);
            }
            return;
        }
        long stride = count / SAMPLE;
        for (int i = 0; i < 1000; i++) {
            body.accept(i);
            body.accept(count - 1 - i);
        }
        for (long i = 1000; i < count - 1000; i += stride) {
            body.accept((int) i);
        }
    }

    /** Folds every element's bits into the result hash, eight bytes at a time (of a direct copy). */
    private void hash(DenseBuffer b) {
        DenseBuffer direct = DenseBuffer.allocateDirect(b.dataType(), b.count());
        direct.copyFrom(b);
        java.nio.ByteBuffer bytes = direct.bytes().orElseThrow();
        long h = resultHash;
        while (bytes.remaining() >= Long.BYTES) {
            h = (h ^ bytes.getLong()) * 0x100000001B3L;
        }
        while (bytes.hasRemaining()) {
            h = (h ^ bytes.get()) * 0x100000001B3L;
        }
        resultHash = h ^ b.count();
    }
}
