package dev.cohort.hier;

import dev.cohort.core.collective.Collective;
import dev.cohort.core.collective.CollectiveException;
import dev.cohort.core.collective.CollectiveTimeoutException;
import dev.cohort.core.collective.PendingWork;
import dev.cohort.core.collective.Work;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

/**
 * Runs the calls of the hierarchical group and of its host view one at a time, in issue order, so
 * their stages reach the sub-groups in the same order on every rank. As in the shm engine, the
 * thread that awaits a call runs the queue up to it (no thread hand-off on the common
 * {@code allreduce(..).await()}), and an engine thread runs calls nobody awaits within
 * {@link #GRACE_NS}.
 *
 * <p>After a failure the queue is broken: later calls fail at once, naming the first failure.
 */
final class CallQueue {

    /** What a call does, given its deadline ({@link System#nanoTime()}). */
    interface Body {
        void run(long deadline);
    }

    static final long GRACE_NS = 200_000;

    private final Stages stages;
    private final Consumer<CollectiveException> onFailure;
    private final ConcurrentLinkedQueue<Task> queue = new ConcurrentLinkedQueue<>();
    private final ReentrantLock runner = new ReentrantLock();
    private final AtomicBoolean engineIdle = new AtomicBoolean();
    private final Thread engine;
    private volatile boolean closing;
    private volatile CollectiveException broken;
    private volatile Task current;

    CallQueue(String name, Stages stages, Consumer<CollectiveException> onFailure) {
        this.stages = stages;
        this.onFailure = onFailure;
        this.engine = Thread.ofPlatform().daemon().name(name).unstarted(this::engineLoop);
        engine.start();
    }

    final class Task implements Work {
        final String who;
        final Collective call;
        final Body body;
        final PendingWork pending;
        final long deadline;
        final Duration timeout;

        Task(String who, Collective call, Duration timeout, Body body) {
            this.who = who;
            this.call = call;
            this.body = body;
            this.timeout = timeout;
            this.deadline = System.nanoTime() + timeout.toNanos();
            this.pending = new PendingWork(call, timeout, w -> timedOut(this));
        }

        String describe() {
            return who + ": " + call.describe();
        }

        @Override public Collective collective() { return call; }
        @Override public boolean isDone() { return pending.isDone(); }
        @Override public Optional<CollectiveException> failure() { return pending.failure(); }
        @Override public void await(Duration timeout) { pending.await(timeout); }

        @Override
        public void await() {
            runUntil(this);
            pending.await();
        }
    }

    Work submit(String who, Collective call, Duration timeout, Body body) {
        Task task = new Task(who, call, timeout, body);
        queue.add(task);
        if (engineIdle.get() && engineIdle.compareAndSet(true, false)) {
            LockSupport.unpark(engine);
        }
        return task;
    }

    private void runUntil(Task task) {
        while (!task.isDone()) {
            runner.lock();
            try {
                runOne();
            } finally {
                runner.unlock();
            }
        }
    }

    /** Under the runner lock: runs the oldest queued call, if any. */
    private void runOne() {
        Task t = queue.poll();
        if (t == null) {
            return;
        }
        if (t.isDone()) {
            // Its waiter reached the deadline before it started: the ranks are out of step now.
            fail(t, t.failure().orElseGet(() -> new CollectiveException(t.describe() + ": abandoned")));
            return;
        }
        CollectiveException b = broken;
        if (b != null) {
            t.pending.fail(new CollectiveException(t.describe() + ": the group is unusable after an earlier failure: "
                    + b.getMessage(), b));
            return;
        }
        if (closing) {
            t.pending.fail(new CollectiveException(t.describe() + ": the process group was closed"));
            return;
        }
        current = t;
        try {
            t.body.run(t.deadline);
            t.pending.complete();
        } catch (CollectiveException e) {
            fail(t, e);
        } catch (RuntimeException | Error e) {
            fail(t, new CollectiveException(t.describe() + " failed: " + e, e));
        } finally {
            current = null;
        }
    }

    private void fail(Task t, CollectiveException e) {
        boolean first = broken == null;
        if (first) {
            broken = e;
        }
        t.pending.fail(e);
        if (first) {
            onFailure.accept(e);
        }
    }

    private CollectiveException timedOut(Task t) {
        if (current == t) {
            return new CollectiveTimeoutException(t.describe() + ": timed out after " + t.timeout + " in the stage "
                    + stages.current);
        }
        Task running = current;
        return new CollectiveTimeoutException(t.describe() + ": timed out after " + t.timeout + " before it started"
                + (running == null ? "" : ", queued behind " + running.call.describe()));
    }

    private void engineLoop() {
        while (!closing) {
            if (queue.isEmpty()) {
                engineIdle.set(true);
                if (queue.isEmpty() && !closing) {
                    LockSupport.park(this);
                }
                engineIdle.set(false);
                continue;
            }
            LockSupport.parkNanos(GRACE_NS);   // let an awaiting caller run it on its own thread
            if (!queue.isEmpty() && runner.tryLock()) {
                try {
                    runOne();
                } finally {
                    runner.unlock();
                }
            }
        }
    }

    /**
     * Stops the engine, waits up to 10 s for a running call, and fails the queued ones. Returns
     * whether no call is running any more (the sub-groups may be closed).
     */
    boolean close() {
        closing = true;
        LockSupport.unpark(engine);
        boolean idle = false;
        try {
            engine.join(TimeUnit.SECONDS.toMillis(10));
            idle = runner.tryLock(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try {
            for (Task t; (t = queue.poll()) != null; ) {
                t.pending.fail(new CollectiveException(t.describe() + ": the process group was closed"));
            }
        } finally {
            if (idle) {
                runner.unlock();
            }
        }
        return idle;
    }
}
