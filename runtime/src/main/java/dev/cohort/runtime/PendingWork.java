package dev.cohort.runtime;

import dev.cohort.api.collective.Collective;

import dev.cohort.api.collective.CollectiveException;
import dev.cohort.api.collective.CollectiveTimeoutException;
import dev.cohort.api.collective.Work;

import dev.cohort.api.Timeouts;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * A {@link Work} completed by an engine thread. When a waiter reaches the operation's deadline
 * first, {@code onDeadline} turns the operation into a failure (the engine knows which peers are
 * missing), and every waiter sees that failure.
 */
public final class PendingWork implements Work {

    private final Collective collective;
    private final long deadlineNanos;
    private final Function<PendingWork, CollectiveException> onDeadline;
    private final CountDownLatch done = new CountDownLatch(1);
    private volatile CollectiveException failure;

    public PendingWork(Collective collective, Duration timeout, Function<PendingWork, CollectiveException> onDeadline) {
        this.collective = collective;
        this.deadlineNanos = System.nanoTime() + timeout.toNanos();
        this.onDeadline = onDeadline;
    }

    /** Marks success. Only the first of {@code complete} and {@code fail} counts. */
    public synchronized boolean complete() {
        if (done.getCount() == 0) {
            return false;
        }
        done.countDown();
        return true;
    }

    /** Marks failure. Only the first of {@code complete} and {@code fail} counts. */
    public synchronized boolean fail(CollectiveException cause) {
        if (done.getCount() == 0) {
            return false;
        }
        failure = cause;
        done.countDown();
        return true;
    }

    @Override
    public Collective collective() {
        return collective;
    }

    @Override
    public boolean isDone() {
        return done.getCount() == 0;
    }

    @Override
    public Optional<CollectiveException> failure() {
        return Optional.ofNullable(failure);
    }

    @Override
    public void await() {
        awaitNanos(Long.MAX_VALUE);
    }

    @Override
    public void await(Duration timeout) {
        awaitNanos(Timeouts.requirePositive(timeout).toNanos());
    }

    private void awaitNanos(long requested) {
        long untilDeadline = deadlineNanos - System.nanoTime();
        long wait = Math.min(requested, Math.max(0, untilDeadline));
        boolean finished;
        try {
            finished = done.await(wait, TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CollectiveException("interrupted while waiting for " + collective.describe(), e);
        }
        if (!finished) {
            if (deadlineNanos - System.nanoTime() <= 0) {
                fail(onDeadline.apply(this));
            } else {
                throw new CollectiveTimeoutException(collective.describe() + " still running after "
                        + Duration.ofNanos(requested) + "; it stays pending until its own timeout");
            }
        }
        CollectiveException f = failure;
        if (f != null) {
            throw f;
        }
    }
}
