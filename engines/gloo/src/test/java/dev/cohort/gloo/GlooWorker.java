package dev.cohort.gloo;

import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.runtime.store.JobNotes;
import dev.cohort.testkit.WorkerProcess;
import java.time.Duration;
import java.util.OptionalInt;

/**
 * A worker process of the gloo tests. Modes: {@code conformance} (the whole suite),
 * {@code conformance-small} (without the 4 Mi cases), {@code smoke} (one allreduce),
 * {@code steady MILLIS} (checked allreduces for a while), {@code notes} (notes in the store),
 * {@code notes-store-gone} (notes once rank 0 and its store left).
 * Always checks the topology, the node-local group and averageAll, and prints
 * {@code TOPOLOGY ...} and {@code OK ...} lines for the test to read.
 */
public final class GlooWorker {

    /** More distinct buffers than the group caches tensor headers for, two per call. */
    static int manyBuffers(GlooBackend backend) {
        int n = backend.worldSize();
        for (int i = 1; i <= 400; i++) {
            DenseBuffer in = DenseBuffer.allocateDirect(dev.cohort.api.collective.DataType.INT32, i * n);
            DenseBuffer out = DenseBuffer.allocateDirect(dev.cohort.api.collective.DataType.INT32, i);
            for (int k = 0; k < i * n; k++) {
                in.setLong(k, 1);
            }
            backend.group()
                    .reduceScatter(in, out, dev.cohort.api.collective.ReduceOp.SUM)
                    .await();
            if (out.getLong(i - 1) != n) {
                throw new AssertionError("reduce-scatter #" + i + " gave " + out.getLong(i - 1));
            }
        }
        return 400;
    }

    /** Checked allreduces for about {@code millis} (every rank runs the same count). */
    static int steady(GlooBackend backend, int millis) throws InterruptedException {
        int n = backend.worldSize();
        int calls = millis / 20;
        for (int i = 0; i < calls; i++) {
            long[] x = {backend.rank() + i, 1};
            backend.group()
                    .allreduce(DenseBuffer.of(x), dev.cohort.api.collective.ReduceOp.SUM)
                    .await();
            if (x[0] != (long) n * i + (long) n * (n - 1) / 2 || x[1] != n) {
                throw new AssertionError("allreduce #" + i + " gave " + java.util.Arrays.toString(x));
            }
            Thread.sleep(20);
        }
        return calls;
    }

    /** Every rank leaves a note in the store; after a barrier every rank reads everyone's. */
    static int notes(GlooBackend backend) {
        JobNotes notes = backend.notes();
        int rank = backend.rank();
        int n = backend.worldSize();
        if (!notes.post("from/" + rank, "rank " + rank + " was here")) {
            throw new AssertionError("the store did not take rank " + rank + "'s note");
        }
        backend.group().barrier().await();
        for (int r = 0; r < n; r++) {
            int from = r;
            String text = notes.read("from/" + r).orElseThrow(() -> new AssertionError("no note from rank " + from));
            if (!text.equals("rank " + r + " was here")) {
                throw new AssertionError("rank " + r + "'s note reads '" + text + "'");
            }
        }
        if (notes.read("from/" + n).isPresent()) {
            throw new AssertionError("a note that nobody left");
        }
        backend.group().barrier().await();
        return n + 1;
    }

    /**
     * Rank 0, which hosts the store, leaves; rank 1 then asks for a note: empty within the store's
     * 2 s, and every later call answers at once (prints {@code NOTES GONE <ms> <ms> <ms>}).
     */
    static void notesAfterTheStoreIsGone(GlooBackend backend) throws InterruptedException {
        backend.group().barrier().await();
        if (backend.rank() == 0) {
            System.out.println("OK rank 0 leaving");
            System.out.flush();
            Runtime.getRuntime().halt(0);
        }
        Thread.sleep(1000);
        JobNotes notes = backend.notes();
        long t0 = System.nanoTime();
        boolean first = notes.read("from/0").isPresent();
        long t1 = System.nanoTime();
        boolean second = notes.read("from/0").isPresent();
        long t2 = System.nanoTime();
        boolean posted = notes.post("from/1", "too late");
        long t3 = System.nanoTime();
        if (first || second || posted) {
            throw new AssertionError("a store that is gone answered: " + first + " " + second + " " + posted);
        }
        System.out.println(
                "NOTES GONE " + (t1 - t0) / 1_000_000 + " " + (t2 - t1) / 1_000_000 + " " + (t3 - t2) / 1_000_000);
        System.out.println("OK rank " + backend.rank());
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }

    public static void main(String[] args) {
        String mode = args.length > 0 ? args[0] : "conformance";
        GlooOptions options = new GlooOptions().timeout(Duration.ofSeconds(60)).connectTimeout(Duration.ofSeconds(60));
        Long spinMicros = Long.getLong("cohort.test.glooSpinUs");
        if (spinMicros != null) {
            options.spin(Duration.ofNanos(spinMicros * 1000));
        }
        if (args.length > 1 && args[1].startsWith("file:")) {
            options.rendezvous(args[1]);
        }
        WorkerProcess.main(() -> {
            try (GlooBackend backend = new GlooBackend(options, System.getenv())) {
                backend.initialize();
                System.out.println("TOPOLOGY " + backend.topology());
                if (mode.equals("notes-store-gone")) {
                    notesAfterTheStoreIsGone(backend);
                }
                OptionalInt suite = WorkerProcess.conformance(mode, backend);
                int checks;
                if (suite.isPresent()) {
                    checks = suite.getAsInt();
                } else if (mode.equals("smoke")) {
                    checks = manyBuffers(backend);
                } else if (mode.equals("steady")) {
                    checks = steady(backend, Integer.parseInt(args[1]));
                } else if (mode.equals("notes")) {
                    checks = notes(backend);
                } else {
                    throw new IllegalArgumentException("unknown mode " + mode);
                }
                WorkerProcess.finish(backend, checks);
            }
        });
    }
}
