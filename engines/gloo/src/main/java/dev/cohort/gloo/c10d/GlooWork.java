package dev.cohort.gloo.c10d;

import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.CollectiveException;
import dev.cohort.libtorch.LibTorch;
import dev.cohort.runtime.DeadlineWork;
import java.time.Duration;
import java.util.Optional;
import java.util.function.Function;
import org.bytedeco.javacpp.chrono.Milliseconds;

/**
 * A collective running in c10d's Gloo process group. Settling it (once, on the first
 * {@code await} or {@code isDone} that sees it finished) copies staged results into the caller's
 * arrays, applies the local finishing step (AVG's division, allgatherv's unpadding) and frees the
 * native objects.
 */
public final class GlooWork extends DeadlineWork {

    /** Extra time granted beyond the operation's timeout for Gloo to report its own timeout. */
    private static final long GRACE_NANOS = Duration.ofSeconds(2).toNanos();

    private final Collective call;
    private final org.bytedeco.pytorch.Work work;
    private final NativeTensors tensors;
    private final Runnable finish;
    private final Function<RuntimeException, CollectiveException> translate;
    private final long issuedAt;
    private final StallReport stall;
    private volatile boolean settled;
    private boolean stallReported;

    public GlooWork(
            Collective call,
            org.bytedeco.pytorch.Work work,
            NativeTensors tensors,
            Runnable finish,
            Duration timeout,
            Function<RuntimeException, CollectiveException> translate,
            StallReport stall) {
        super(call, timeout);
        this.stall = stall;
        this.call = call;
        this.work = work == null ? null : LibTorch.retain(work); // outlives the caller's PointerScope
        this.tensors = tensors;
        this.finish = finish;
        this.translate = translate;
        this.issuedAt = deadlineNanos() - timeout.toNanos();
    }

    /** A call that needs no communication (every rank has zero elements): done at once. */
    public static GlooWork completed(Collective call) {
        GlooWork w = new GlooWork(call, null, null, () -> {}, Duration.ofSeconds(1), e -> null, null);
        w.settled = true;
        return w;
    }

    @Override
    public boolean isDone() {
        if (settled) {
            return true;
        }
        if (work.isCompleted()) {
            settle(null);
            return true;
        }
        return false;
    }

    @Override
    public Optional<CollectiveException> failure() {
        isDone();
        return super.failure();
    }

    @Override
    protected void awaitSettled(long requested) {
        long start = System.nanoTime();
        while (!settled) {
            long elapsed = System.nanoTime() - start;
            long untilDeadline = deadlineNanos() + GRACE_NANOS - System.nanoTime();
            long wait = Math.max(1, Math.min(requested - elapsed, untilDeadline));
            boolean userLimit = requested - elapsed < untilDeadline;
            boolean stallCheck = false;
            if (stall != null && !stallReported) {
                long toStall = stall.after().toNanos() - (System.nanoTime() - issuedAt);
                if (toStall > 0 && toStall < wait) {
                    wait = toStall;
                    stallCheck = true;
                }
            }
            try {
                work._wait(new Milliseconds(Math.max(1, (wait + 999_999) / 1_000_000)));
                settle(null);
            } catch (RuntimeException e) {
                if (!work.isCompleted() && isWaitTimeout(e) && stallCheck) {
                    stallReported = true;
                    stall.report(call);
                    continue;
                }
                if (!work.isCompleted() && userLimit && isWaitTimeout(e)) {
                    throw stillRunning(requested);
                }
                settle(e);
            }
        }
    }

    /** Reports a collective that waits longer than a stall time (see {@code StallWatch}). */
    public interface StallReport {
        Duration after();

        void report(Collective call);
    }

    private synchronized void settle(RuntimeException error) {
        if (settled) {
            return;
        }
        try {
            if (error == null && work.isSuccess()) {
                tensors.copyOut();
                finish.run();
            } else {
                recordFailure(translate.apply(error != null ? error : new RuntimeException("Gloo reported a failure")));
            }
        } catch (RuntimeException e) {
            recordFailure(translate.apply(e));
        } finally {
            settledNow();
            settled = true;
            // A call that never finished may still be written to by Gloo: keep its memory (a leak
            // on a broken group, never a use-after-free).
            if (work.isCompleted()) {
                tensors.close();
                LibTorch.release(work);
            }
        }
    }

    private static boolean isWaitTimeout(RuntimeException e) {
        return String.valueOf(e.getMessage()).contains("Operation timed out");
    }
}
