package dev.cohort.runtime;

import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.CollectiveException;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * A {@link dev.cohort.api.collective.Work} completed by an engine thread. When a waiter reaches the operation's deadline
 * first, {@code onDeadline} turns the operation into a failure (the engine knows which peers are
 * missing), and every waiter sees that failure.
 */
public final class PendingWork extends DeadlineWork {

    private final Function<PendingWork, CollectiveException> onDeadline;
    private final CountDownLatch done = new CountDownLatch(1);

    public PendingWork(Collective collective, Duration timeout, Function<PendingWork, CollectiveException> onDeadline) {
        super(collective, timeout);
        this.onDeadline = onDeadline;
    }

    /** Marks success. Only the first of {@code complete} and {@code fail} counts. */
    public synchronized boolean complete() {
        if (done.getCount() == 0) {
            return false;
        }
        settledNow();
        done.countDown();
        return true;
    }

    /** Marks failure. Only the first of {@code complete} and {@code fail} counts. */
    public synchronized boolean fail(CollectiveException cause) {
        if (done.getCount() == 0) {
            return false;
        }
        recordFailure(cause);
        settledNow();
        done.countDown();
        return true;
    }

    @Override
    public boolean isDone() {
        return done.getCount() == 0;
    }

    @Override
    protected void awaitSettled(long requested) {
        long untilDeadline = deadlineNanos() - System.nanoTime();
        long wait = Math.min(requested, Math.max(0, untilDeadline));
        boolean finished;
        try {
            finished = done.await(wait, TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CollectiveException(
                    "interrupted while waiting for " + collective().describe(), e);
        }
        if (!finished) {
            if (deadlineNanos() - System.nanoTime() <= 0) {
                fail(onDeadline.apply(this));
            } else {
                throw stillRunning(requested);
            }
        }
    }
}
