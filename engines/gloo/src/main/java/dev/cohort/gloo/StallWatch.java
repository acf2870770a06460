package dev.cohort.gloo;

import dev.cohort.libtorch.LibTorch;
import dev.cohort.runtime.Daemons;
import dev.cohort.runtime.RankNames;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.bytedeco.javacpp.chrono.Milliseconds;
import org.bytedeco.pytorch.Store;
import org.bytedeco.pytorch.StringVector;

/**
 * Names the ranks that stall a collective (Horovod's stall inspector, for Gloo).
 *
 * <p>Every rank publishes, at most twice a second and only when it changed, the sequence number
 * of the last collective it issued, under {@code <scope>/issued/<rank>} in the rendezvous store.
 * A rank whose collective has waited longer than the stall time reads the others' numbers: those
 * below its own have not issued the collective yet (stopped, slow, or gone). The store is read with
 * a short timeout of its own, so a stopped rank 0 (which hosts the store) is reported as such
 * instead of blocking the report.
 */
final class StallWatch implements AutoCloseable {

    private static final long PUBLISH_MILLIS = 500;
    private static final Duration STORE_TIMEOUT = Duration.ofSeconds(2);

    private final Store store;
    private final String prefix;
    private final int rank;
    private final int size;
    private final Duration stallTime;
    private final AtomicLong issued = new AtomicLong(-1);
    private final ScheduledExecutorService publisher;
    private long published = -1;

    private final RankNames names;

    StallWatch(Store store, String prefix, int rank, int size, Duration stallTime, RankNames names) {
        this.names = names;
        this.store = LibTorch.retain(store);
        this.store.setTimeout(new Milliseconds(STORE_TIMEOUT.toMillis()));
        this.prefix = prefix;
        this.rank = rank;
        this.size = size;
        this.stallTime = stallTime;
        this.publisher = Executors.newSingleThreadScheduledExecutor(Daemons.named("cohort-stall-watch"));
        publisher.scheduleWithFixedDelay(this::publish, PUBLISH_MILLIS, PUBLISH_MILLIS, TimeUnit.MILLISECONDS);
    }

    Duration stallTime() {
        return stallTime;
    }

    void issued(long sequence) {
        issued.accumulateAndGet(sequence, Math::max);
    }

    private synchronized void publish() {
        long now = issued.get();
        if (now == published) {
            return;
        }
        try {
            store.set(prefix + rank, Long.toString(now));
            published = now;
        } catch (RuntimeException e) {
            publisher.shutdown(); // the store is gone (the job is ending): nothing left to tell
        }
    }

    /** Who has not issued collective {@code sequence} yet, in words. */
    synchronized String laggards(long sequence) {
        List<Integer> behind = new ArrayList<>();
        List<Integer> silent = new ArrayList<>();
        try {
            for (int r = 0; r < size; r++) {
                if (r == rank) {
                    continue;
                }
                if (!store.check(new StringVector(prefix + r))) {
                    silent.add(r);
                } else if (Long.parseLong(store.get_to_str(prefix + r)) < sequence) {
                    behind.add(r);
                }
            }
        } catch (RuntimeException e) {
            return "the rendezvous store on rank 0 does not answer within " + STORE_TIMEOUT
                    + " (rank 0 stopped or gone?)";
        }
        behind.addAll(silent);
        if (behind.isEmpty()) {
            return "every rank has issued it; a peer may be stopped inside it or its network stalled";
        }
        return "rank(s) " + names.ranks(behind) + " have not issued it yet (stopped, slow or gone?)";
    }

    /** Stops publishing, waits for a publish in progress (bounded by the store timeout), frees the store. */
    @Override
    public void close() {
        publisher.shutdown();
        try {
            if (!publisher.awaitTermination(STORE_TIMEOUT.toMillis() + 1000, TimeUnit.MILLISECONDS)) {
                return; // still inside the store: leak it rather than free it under the thread
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        }
        synchronized (this) {
            LibTorch.release(store);
        }
    }
}
