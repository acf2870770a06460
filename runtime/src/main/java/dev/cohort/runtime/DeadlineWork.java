package dev.cohort.runtime;

import dev.cohort.api.Timeouts;
import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.CollectiveException;
import dev.cohort.api.collective.CollectiveTimeoutException;
import dev.cohort.api.collective.Work;
import dev.cohort.runtime.flight.FlightRecorder;
import java.time.Duration;
import java.util.Optional;

/**
 * What every engine's {@link Work} shares: the call, its deadline (fixed when it is issued), its
 * failure, and {@code await}'s envelope — wait as the engine knows how, then throw the failure.
 * A waiter's own limit that runs out first is not a failure: the operation stays pending.
 */
public abstract class DeadlineWork implements Work, FlightTracked {

    private final Collective collective;
    private final long deadlineNanos;
    private volatile CollectiveException failure;
    private long ticket;
    private volatile FlightRecorder recorder;
    /** Set by {@link #settledNow()}: the call settled (read against {@link #recorder}, so one of the two marks it). */
    private volatile boolean settled;

    protected DeadlineWork(Collective collective, Duration timeout) {
        this.collective = collective;
        this.deadlineNanos = System.nanoTime() + timeout.toNanos();
    }

    /**
     * Waits until the operation settled, or until {@code requestedNanos} passed (then throws
     * {@link #stillRunning}); reaching the operation's own deadline settles it as a failure.
     */
    protected abstract void awaitSettled(long requestedNanos);

    @Override
    public final Collective collective() {
        return collective;
    }

    /** When the operation times out, on {@link System#nanoTime()}'s clock. */
    protected final long deadlineNanos() {
        return deadlineNanos;
    }

    @Override
    public Optional<CollectiveException> failure() {
        return Optional.ofNullable(failure);
    }

    @Override
    public final void recordedAs(FlightRecorder recorder, long ticket) {
        this.ticket = ticket;
        this.recorder = recorder;
        if (settled || isDone()) {
            recorder.settled(ticket, failure != null);
        }
    }

    /**
     * Subclasses call this as the call settles, its failure (if any) recorded and before its
     * waiters are released, so that a waiter that returns finds it settled on record.
     */
    protected final void settledNow() {
        settled = true;
        FlightRecorder r = recorder;
        if (r != null) {
            r.settled(ticket, failure != null);
        }
    }

    /** Records the failure every waiter will see; callers make sure it is recorded once. */
    protected final void recordFailure(CollectiveException cause) {
        failure = cause;
    }

    @Override
    public final void await() {
        awaitNanos(Long.MAX_VALUE);
    }

    @Override
    public final void await(Duration timeout) {
        awaitNanos(Timeouts.requirePositive(timeout).toNanos());
    }

    private void awaitNanos(long requested) {
        awaitSettled(requested);
        CollectiveException f = failure;
        if (f != null) {
            throw f;
        }
    }

    /** A waiter's own limit ran out before the operation's. */
    protected final CollectiveTimeoutException stillRunning(long requestedNanos) {
        return new CollectiveTimeoutException(
                collective.describe() + " still running after " + Duration.ofNanos(requestedNanos)
                        + "; it stays pending until its own timeout",
                null);
    }
}
