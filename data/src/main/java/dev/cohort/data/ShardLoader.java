package dev.cohort.data;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * One rank's batches of one epoch, from a {@link DataPosition} on, decoded ahead by background
 * threads: {@code readers} threads decode the row groups of the rank's share in reading order
 * (each at most {@code readers} row groups ahead of the batcher), and a batcher thread passes the
 * examples through the shuffle buffer into batches, kept in a queue of {@code queueDepth}. The
 * training thread waits in {@link #next()} only when the queue is empty; the wait is measured.
 *
 * <p>Memory: {@code (queueDepth + 2)} batches, {@code 2 x readers} decoded row groups, and the
 * shuffle buffer's examples (plus up to one row group), whatever the dataset's size; the plan
 * keeps one int per example of the epoch (an index, not the data).
 *
 * <p>A failure of a background thread (a {@link DataException} naming the file, row group and
 * column) is thrown by the next call to {@link #next()}. {@link #close()} stops the threads and
 * waits for them.
 */
public final class ShardLoader implements Iterator<Batch>, AutoCloseable {

    /** How often a waiting thread looks at whether the loader was closed or failed. */
    private static final long CHECK_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
    /** How long {@link #close()} waits for each thread. */
    private static final Duration STOP_TIMEOUT = Duration.ofSeconds(30);

    /** Input positions [from, to) of the share, whose examples lie in row group {@code rowGroup}. */
    private record Unit(int rowGroup, int from, int to) {}

    /**
     * A unit's examples that are still to be handed out: their positions in the plan and their
     * rows in the decoded row group (kept whole until batched, not copied out).
     */
    private record Block(int[] positions, int[] rowOf, RowGroupReader.Decoded rows) {}

    private final ParquetDataset dataset;
    private final EpochPlan plan;
    private final LoaderOptions options;
    private final int steps;
    private final boolean[] pending;
    private final List<Unit> units;
    private final BlockingQueue<Batch> ready;
    private final BlockingQueue<Batch> free;
    private final AtomicReference<RuntimeException> failure = new AtomicReference<>();
    private final List<Thread> threads = new ArrayList<>();
    private final Object lock = new Object();
    private final Map<Integer, Block> decoded = new HashMap<>(); // guarded by lock
    private int nextToRead; // guarded by lock
    private int batched; // units the batcher took; guarded by lock
    private volatile boolean closed;
    private int handedOut;
    /** With errors agreed on: the batches before this one every rank holds already, ready. */
    private int agreedUntil;

    private Batch held;
    private long waitNanos;
    private DataPosition position;
    private volatile int peakHeld;

    ShardLoader(ParquetDataset dataset, LoaderOptions options, DataPosition from) {
        this.dataset = dataset;
        this.options = options.copy();
        this.plan = EpochPlan.compute(
                dataset.rowGroupRows(),
                options.seed,
                options.remainder,
                options.shuffleBuffer,
                from,
                options.worldSize,
                options.rank);
        this.position = plan.position;
        this.steps = plan.stepsLeft(options.batchSize);
        this.pending = new boolean[plan.perRank()];
        Arrays.fill(pending, true);
        for (int j = 0; j < plan.consumed; j++) {
            pending[plan.order[j]] = false;
        }
        this.units = units();
        int buffers = Math.min(steps, options.queueDepth) + 2;
        this.ready = new ArrayBlockingQueue<>(buffers);
        this.free = new ArrayBlockingQueue<>(buffers);
        for (int i = 0; i < buffers; i++) {
            free.add(new Batch(options.batchSize, dataset.width(), dataset.longLabels()));
        }
        String name = "cohort-data-rank" + options.rank;
        for (int i = 0; i < options.readers; i++) {
            threads.add(new Thread(this::readLoop, name + "-reader-" + i));
        }
        threads.add(new Thread(this::batchLoop, name + "-batcher"));
        for (Thread t : threads) {
            t.setDaemon(true);
            t.start();
        }
    }

    /** The batches this loader hands out in all (the rest of the epoch); the same on every rank. */
    public int steps() {
        return steps;
    }

    /** The position after the last batch handed out (the loader's start before the first). */
    public DataPosition position() {
        return position;
    }

    /** How long the training thread waited in {@link #next()} so far, in all. */
    public Duration waitTime() {
        return Duration.ofNanos(waitNanos);
    }

    /** The most examples the batcher held at once (in the shuffle buffer or waiting to enter it): for tests. */
    int peakHeldExamples() {
        return peakHeld;
    }

    @Override
    public boolean hasNext() {
        return handedOut < steps;
    }

    /**
     * The next batch; the previous one's memory goes back to the loader.
     *
     * @throws DataException the first failure of a reader (naming file, row group and column), or
     *     of any rank's reader when errors are agreed on, or no batch within the timeout
     * @throws NoSuchElementException after the last batch
     */
    @Override
    public Batch next() {
        if (!hasNext()) {
            throw new NoSuchElementException(
                    "the loader handed out all " + steps + " batches of epoch " + plan.position.epoch());
        }
        if (closed) {
            throw new IllegalStateException("the loader is closed");
        }
        if (options.group == null || handedOut < agreedUntil) {
            return take();
        }
        Batch batch = null;
        RuntimeException local = null;
        try {
            batch = take();
        } catch (RuntimeException e) {
            local = e;
        }
        // This batch and those queued behind it: a failure later than them surfaces after them.
        int window = ErrorAgreement.agree(options.group, local, local == null ? 1 + ready.size() : 0);
        agreedUntil = handedOut - 1 + window;
        return batch;
    }

    private Batch take() {
        if (held != null) {
            free.add(held);
            held = null;
        }
        long start = System.nanoTime();
        long deadline = start + options.timeout.toNanos();
        Batch batch = null;
        try {
            batch = ready.poll(); // a batch made before a failure is still handed out
            while (batch == null) {
                throwFailure();
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new DataException(
                            null,
                            -1,
                            null,
                            "no batch within " + options.timeout
                                    + ": the readers fell behind (a slow file system?); raise LoaderOptions.timeout or readers");
                }
                batch = ready.poll(Math.min(left, CHECK_NANOS), TimeUnit.NANOSECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for a batch", e);
        }
        batch.waitNanos = System.nanoTime() - start;
        waitNanos += batch.waitNanos;
        held = batch;
        handedOut++;
        position = batch.positionAfter;
        return batch;
    }

    private void throwFailure() {
        RuntimeException e = failure.get();
        if (e != null) {
            throw e;
        }
    }

    private void fail(RuntimeException e) {
        if (!closed) {
            failure.compareAndSet(null, e);
        }
        synchronized (lock) {
            lock.notifyAll();
        }
    }

    /** The share's pending input positions as runs within one row group, in reading order. */
    private List<Unit> units() {
        List<Unit> out = new ArrayList<>();
        int[] input = plan.input;
        int p = 0;
        while (p < input.length) {
            if (!pending[p]) {
                p++;
                continue;
            }
            int g = dataset.rowGroupOf(input[p]);
            ParquetDataset.RowGroup group = dataset.rowGroup(g);
            int end = p + 1;
            while (end < input.length
                    && input[end] >= group.firstExample()
                    && input[end] < group.firstExample() + group.rows()) {
                end++;
            }
            out.add(new Unit(g, p, end));
            p = end;
        }
        return out;
    }

    private void readLoop() {
        try (BlockReader reader = BlockReader.of(dataset)) {
            while (true) {
                int u;
                synchronized (lock) {
                    while (!closed
                            && failure.get() == null
                            && nextToRead < units.size()
                            && nextToRead >= batched + options.readers) {
                        lock.wait(CHECK_NANOS / 1_000_000);
                    }
                    if (closed || failure.get() != null || nextToRead >= units.size()) {
                        return;
                    }
                    u = nextToRead++;
                }
                Block block = decode(reader, units.get(u));
                synchronized (lock) {
                    decoded.put(u, block);
                    lock.notifyAll();
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            fail(e);
        }
    }

    private Block decode(BlockReader reader, Unit unit) {
        RowGroupReader.Decoded rows = reader.read(unit.rowGroup());
        long first = dataset.rowGroup(unit.rowGroup()).firstExample();
        int count = 0;
        for (int p = unit.from(); p < unit.to(); p++) {
            count += pending[p] ? 1 : 0;
        }
        int[] positions = new int[count];
        int[] rowOf = new int[count];
        int k = 0;
        for (int p = unit.from(); p < unit.to(); p++) {
            if (pending[p]) {
                positions[k] = p;
                rowOf[k] = (int) (plan.input[p] - first);
                k++;
            }
        }
        return new Block(positions, rowOf, rows);
    }

    /** The batcher: blocks in reading order through the shuffle buffer's slots into batches. */
    private void batchLoop() {
        int width = dataset.width();
        // What it holds at most (the shuffle buffer and a row group's examples) from the start, not
        // reached by doubling and copying.
        int most = (int)
                Math.min(Integer.MAX_VALUE / Math.max(1, width), options.shuffleBuffer + dataset.largestRowGroup());
        ShuffleSlots slots = new ShuffleSlots(width, Math.max(1, most));
        int[] slotOf = new int[plan.perRank()];
        Arrays.fill(slotOf, -1);
        int unit = 0;
        try {
            for (int step = 0; step < steps; step++) {
                Batch batch = awaitFree();
                if (batch == null) {
                    return;
                }
                int from = plan.consumed + step * options.batchSize;
                int to = Math.min(from + options.batchSize, plan.perRank());
                for (int j = from; j < to; j++) {
                    int p = plan.order[j];
                    while (slotOf[p] < 0) {
                        Block block = awaitBlock(unit++);
                        if (block == null) {
                            return;
                        }
                        for (int k = 0; k < block.positions().length; k++) {
                            int row = block.rowOf()[k];
                            slotOf[block.positions()[k]] = slots.store(
                                    block.rows().features(), row, block.rows().labels()[row]);
                        }
                        peakHeld = slots.peak();
                    }
                    batch.put(j - from, slots.features(), slotOf[p], slots.label(slotOf[p]));
                    slots.release(slotOf[p]);
                }
                batch.rows = to - from;
                batch.positionAfter = plan.positionAt(to);
                while (!ready.offer(batch, CHECK_NANOS, TimeUnit.NANOSECONDS)) {
                    if (closed) {
                        return;
                    }
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            fail(e);
        }
    }

    private Batch awaitFree() throws InterruptedException {
        Batch batch = null;
        while (batch == null && !closed) {
            batch = free.poll(CHECK_NANOS, TimeUnit.NANOSECONDS);
        }
        return batch;
    }

    /** Unit {@code u} once a reader decoded it, or null when the loader closed or failed. */
    private Block awaitBlock(int u) throws InterruptedException {
        synchronized (lock) {
            while (!decoded.containsKey(u)) {
                if (closed || failure.get() != null) {
                    return null;
                }
                lock.wait(CHECK_NANOS / 1_000_000);
            }
            batched = u + 1;
            lock.notifyAll();
            return decoded.remove(u);
        }
    }

    /**
     * Stops the threads and waits for them (up to 30 s each).
     *
     * @throws IllegalStateException naming a thread that did not stop
     */
    @Override
    public void close() {
        closed = true;
        for (Thread t : threads) {
            t.interrupt();
        }
        List<String> stuck = new ArrayList<>();
        for (Thread t : threads) {
            try {
                t.join(STOP_TIMEOUT.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            if (t.isAlive()) {
                stuck.add(t.getName());
            }
        }
        if (!stuck.isEmpty()) {
            throw new IllegalStateException(
                    "the data loader's threads " + stuck + " did not stop within " + STOP_TIMEOUT);
        }
    }
}
