package dev.cohort.runtime;

import dev.cohort.api.Timeouts;
import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.CollectiveException;
import dev.cohort.api.collective.CollectiveTimeoutException;
import dev.cohort.api.collective.Work;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * Runs a group's calls one at a time, in issue order, mostly on the threads that await them: the
 * execution model of the engines whose calls are cheaper than a thread hand-off (shm, and the
 * hierarchical engine built on it).
 *
 * <p>The thread that calls {@link Work#await()} runs the queue up to its own call, so
 * {@code allreduce(..).await()} runs on the caller's thread. An engine thread runs calls nobody
 * awaits within {@link #GRACE_NS}, so work issued and not awaited still progresses.
 * {@link Work#await(Duration)} and {@link Work#isDone()} only wait or look.
 *
 * <p>The engine thread is not woken for a call made alone: a wake-up is a system call, and on a
 * pinned core the woken thread preempts the caller; both cost more than a small allreduce's
 * arithmetic, and a caller that awaits at once runs the call itself anyway. A call wakes the
 * engine when calls are already queued (work issued ahead of awaiting it, as DDP's bucket
 * allreduces are) or when the engine sleeps because no call came for {@link #IDLE_AFTER_NS}.
 * Otherwise the engine looks at the queue every {@link #POLL_NS} while calls keep coming, so a
 * lone call nobody awaits still starts within about {@code POLL_NS + GRACE_NS}. While every call is
 * run by its own caller (nothing is left to the engine: calls awaited at once, as in training that
 * averages at the step) the period doubles after each look up to {@link #MAX_POLL_NS}, and it
 * drops back to {@code POLL_NS} as soon as the engine runs a call: each look is a wake-up that
 * preempts a computing thread where no CPU is spare. (Waking the engine for every call, or
 * polling on a fixed period, both measured costlier on the calling core.)
 *
 * <p>The engine's waiting is an {@link EngineIdle} and its time a clock, both set through
 * {@link Options} (defaults: parking, {@link System#nanoTime()}); with {@link Options#stepped()}
 * there is no engine thread and the owner runs its duty cycle, {@link #doWork()}, so a test steps
 * it deterministically instead of sleeping.
 *
 * <p>After a failure the queue is broken: later calls fail at once, naming the first failure.
 */
public final class CallQueue {

    private static final Object DONE = new Object();
    private static final VarHandle OUTCOME;
    private static final VarHandle BLOCKED;

    static {
        try {
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            OUTCOME = lookup.findVarHandle(Call.class, "outcome", Object.class);
            BLOCKED = lookup.findVarHandle(Call.class, "blocked", CountDownLatch.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** What a call does. */
    public interface Body {
        void run(Call call);
    }

    /** How long a queued call may wait for an awaiting caller before the engine thread runs it. */
    public static final long GRACE_NS = 200_000;
    /** How often the engine looks at the queue while calls keep coming and it has run some of them. */
    public static final long POLL_NS = 2_000_000;
    /** How often, at least, the engine looks at the queue while calls keep coming but their callers run them all. */
    public static final long MAX_POLL_NS = 8_000_000;
    /** After this long without a call the engine parks until the next call wakes it. */
    public static final long IDLE_AFTER_NS = 20_000_000;

    private final Function<Call, String> whereRunning;
    private final long overrunNanos;
    private final Consumer<CollectiveException> onFailure;
    private final ConcurrentLinkedQueue<Call> queue = new ConcurrentLinkedQueue<>();
    private final ReentrantLock runner = new ReentrantLock();
    /** True while the engine thread is parked until a call wakes it. */
    private final AtomicBoolean engineIdle = new AtomicBoolean();
    /** Calls submitted; the engine reads it to tell a busy group from an idle one (a hint: updates may be lost). */
    private final AtomicLong submitted = new AtomicLong();
    /** Null when the owner steps the engine with {@link #doWork()}. */
    private final Thread engine;

    private final LongSupplier clock;
    private final EngineIdle idle;
    /** The engine's view of {@link #submitted} and since when no call came (its thread's own). */
    private long seen;

    private long quietSince;
    /** The engine's current polling period (its thread's own): see the class comment. */
    private long pollNanos = POLL_NS;

    private volatile boolean closing;
    private volatile CollectiveException broken;
    private volatile Call current;

    /** {@link #CallQueue(String, Function, Consumer, Duration)} with an overrun of one second. */
    public CallQueue(String threadName, Function<Call, String> whereRunning, Consumer<CollectiveException> onFailure) {
        this(threadName, whereRunning, onFailure, Duration.ofSeconds(1));
    }

    /**
     * @param threadName   the engine thread's name
     * @param whereRunning for the message of a call that timed out while running, what it was
     *                     waiting for ("waiting for rank(s) [2]")
     * @param onFailure    told of the first failure (the group tells its peers it gave up)
     * @param overrun      how long past its deadline a running call may take to fail by itself
     *                     (its own message names the peer or stage behind it); a thread waiting
     *                     for a call another thread runs waits that much longer before it fails
     *                     the call with {@code whereRunning}'s words
     */
    public CallQueue(
            String threadName,
            Function<Call, String> whereRunning,
            Consumer<CollectiveException> onFailure,
            Duration overrun) {
        this(threadName, whereRunning, onFailure, new Options().overrun(overrun));
    }

    /** As above, with {@code options} (overrun, clock, idle strategy, engine thread or stepped). */
    public CallQueue(
            String threadName,
            Function<Call, String> whereRunning,
            Consumer<CollectiveException> onFailure,
            Options options) {
        this.whereRunning = whereRunning;
        this.onFailure = onFailure;
        this.overrunNanos = options.overrun.toNanos();
        this.clock = options.clock;
        this.idle = options.idle;
        this.seen = submitted.get();
        this.quietSince = clock.getAsLong();
        if (options.stepped) {
            this.engine = null;
        } else {
            this.engine = Daemons.thread(threadName, this::engineLoop);
            engine.start();
        }
    }

    /**
     * How a queue waits and tells time. Every setting sits next to its default, which is how the
     * engines run: an overrun of one second, {@link System#nanoTime()}, {@link EngineIdle#PARKING},
     * and an engine thread of its own.
     */
    public static final class Options {
        private Duration overrun = Duration.ofSeconds(1);
        private LongSupplier clock = System::nanoTime;
        private EngineIdle idle = EngineIdle.PARKING;
        private boolean stepped;

        /** See {@link CallQueue#CallQueue(String, Function, Consumer, Duration)}; one second by default. */
        public Options overrun(Duration overrun) {
            this.overrun = Objects.requireNonNull(overrun);
            return this;
        }

        /** The time deadlines and the engine's grace and idle periods are measured in (nanoseconds). */
        public Options clock(LongSupplier nanoClock) {
            this.clock = Objects.requireNonNull(nanoClock);
            return this;
        }

        public Options idle(EngineIdle idle) {
            this.idle = Objects.requireNonNull(idle);
            return this;
        }

        /** No engine thread: the owner runs the engine's duty cycle by calling {@link CallQueue#doWork()}. */
        public Options stepped() {
            this.stepped = true;
            return this;
        }

        /**
         * No engine thread, for a group whose every call is awaited as soon as it is made (a group
         * inside another engine, as hier's within and between hosts): each call runs on the thread
         * that awaits it, and a call nobody awaits does not start. The group is spared the engine's
         * periodic looks at its queue, each a wake-up on a CPU the ranks compute on.
         */
        public Options callersOnly() {
            this.stepped = true;
            return this;
        }
    }

    /** One queued call: the {@link Work} its caller holds. */
    public final class Call implements Work, FlightTracked {
        private final String who;
        private final Collective collective;
        private final Body body;
        /** What became of the call: null while pending, {@code DONE}, or its failure. */
        private volatile Object outcome;
        /** Created by the first thread that has to block for the outcome (a caller that runs the call never does). */
        private volatile CountDownLatch blocked;

        private final long issued;
        private final long deadline;
        private final long timeoutNanos;
        private long ticket;
        private volatile dev.cohort.runtime.flight.FlightRecorder recorder;
        /** When the engine started it ({@link System#nanoTime()}); 0 while queued. */
        private volatile long started;

        Call(String who, Collective collective, Duration timeout, Body body) {
            this.who = who;
            this.collective = collective;
            this.body = body;
            this.timeoutNanos = timeout.toNanos();
            this.issued = clock.getAsLong();
            this.deadline = issued + timeoutNanos;
        }

        /** When the call must be done by (the queue's clock: {@link System#nanoTime()} unless a test set another). */
        public long deadline() {
            return deadline;
        }

        public long timeoutNanos() {
            return timeoutNanos;
        }

        /** "shm world rank 0 of 2: allreduce #3 (float32[1024] SUM)". */
        public String describe() {
            return who + ": " + collective.describe();
        }

        /** Whether the group is closing (a running call gives up). */
        public boolean closing() {
            return closing;
        }

        @Override
        public Collective collective() {
            return collective;
        }

        @Override
        public boolean isDone() {
            return outcome != null;
        }

        @Override
        public Optional<CollectiveException> failure() {
            return outcome instanceof CollectiveException e ? Optional.of(e) : Optional.empty();
        }

        @Override
        public void await(Duration timeout) {
            waitFor(Timeouts.requirePositive(timeout).toNanos());
        }

        @Override
        public void await() {
            runUntil(this);
            waitFor(Long.MAX_VALUE);
        }

        /** Success; false when the call had already settled (its waiter reached the deadline first). */
        boolean complete() {
            return settle(DONE);
        }

        /** Failure; false when the call had already settled. */
        boolean fail(CollectiveException cause) {
            return settle(cause);
        }

        private boolean settle(Object result) {
            if (!OUTCOME.compareAndSet(this, null, result)) {
                return false;
            }
            var r = recorder;
            if (r != null) {
                r.settled(ticket, result != DONE); // before blocked waiters go on
            }
            CountDownLatch latch = blocked;
            if (latch != null) {
                latch.countDown();
            }
            return true;
        }

        @Override
        public void recordedAs(dev.cohort.runtime.flight.FlightRecorder recorder, long ticket) {
            this.ticket = ticket;
            this.recorder = recorder;
            long s = started;
            if (s != 0) {
                recorder.started(ticket, s); // it started before it was on record
            }
            Object o = outcome;
            if (o != null) {
                recorder.settled(ticket, o != DONE);
            }
        }

        /**
         * Waits up to {@code requested} and at most until the deadline, where the call fails naming
         * what it was waiting for; throws its failure.
         */
        private void waitFor(long requested) {
            if (outcome == null) {
                long wait = Math.min(requested, Math.max(0, deadline - clock.getAsLong()));
                boolean settled;
                try {
                    settled = latch().await(wait, TimeUnit.NANOSECONDS);
                    if (!settled && current == this && deadline - clock.getAsLong() <= 0) {
                        // A running call fails by itself at its deadline (or within the overrun
                        // its engine allows), naming what it waited for: give it the chance.
                        settled = latch().await(overrunNanos, TimeUnit.NANOSECONDS);
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new CollectiveException("interrupted while waiting for " + collective.describe(), e);
                }
                if (!settled) {
                    if (deadline - clock.getAsLong() <= 0) {
                        settle(timedOut(this));
                    } else {
                        throw new CollectiveTimeoutException(
                                collective.describe() + " still running after " + Duration.ofNanos(requested)
                                        + "; it stays pending until its own timeout",
                                null);
                    }
                }
            }
            if (outcome instanceof CollectiveException e) {
                throw e;
            }
        }

        /** The latch a blocking waiter waits on, made once; counted down here if the call settled meanwhile. */
        private CountDownLatch latch() {
            CountDownLatch latch = blocked;
            if (latch == null) {
                latch = new CountDownLatch(1);
                if (!BLOCKED.compareAndSet(this, null, latch)) {
                    latch = blocked;
                }
            }
            if (outcome != null) {
                latch.countDown(); // settled before the settler could see the latch
            }
            return latch;
        }
    }

    /** Queues a call; {@code who} starts its messages ("shm world rank 0 of 2"). */
    public Work submit(String who, Collective collective, Duration timeout, Body body) {
        Call call = new Call(who, collective, timeout, body);
        boolean behind = !queue.isEmpty();
        queue.add(call);
        submitted.lazySet(submitted.get() + 1);
        if (behind || engineIdle.get() && engineIdle.compareAndSet(true, false)) {
            idle.wake(engine);
        }
        return call;
    }

    /** Holds the runner lock while {@code action} runs: no call runs meanwhile (diagnostics, tests). */
    public <T> T whileIdle(Supplier<T> action) {
        runner.lock();
        try {
            return action.get();
        } finally {
            runner.unlock();
        }
    }

    /**
     * Runs queued calls until {@code call} is done, or until its deadline passes while another
     * thread runs calls (then the call's own wait reports the timeout, naming the call it
     * was queued behind).
     */
    private void runUntil(Call call) {
        while (!call.isDone()) {
            try {
                long left = call.deadline - clock.getAsLong();
                if (left <= 0 || !runner.tryLock(left, TimeUnit.NANOSECONDS)) {
                    return;
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
            try {
                // Hold the runner until this call is done: the engine must not take the next
                // queued call between two that this thread would run anyway.
                while (!call.isDone() && !queue.isEmpty()) {
                    runOne();
                }
            } finally {
                runner.unlock();
            }
        }
    }

    /** Under the runner lock: runs the oldest queued call, if any. */
    private void runOne() {
        Call c = queue.poll();
        if (c == null) {
            return;
        }
        if (c.isDone()) {
            // Its waiter reached the deadline before it started: the ranks are out of step now.
            fail(c, c.failure().orElseGet(() -> new CollectiveException(c.describe() + ": abandoned")));
            return;
        }
        CollectiveException b = broken;
        if (b != null) {
            c.fail(new CollectiveException(
                    c.describe() + ": the group is unusable after an earlier failure: " + b.getMessage(), b));
            return;
        }
        if (closing) {
            c.fail(new CollectiveException(c.describe() + ": the process group was closed"));
            return;
        }
        current = c;
        c.started = System.nanoTime();
        var r = c.recorder;
        if (r != null) {
            r.started(c.ticket, c.started);
        }
        try {
            c.body.run(c);
            if (!c.complete()) {
                // Its waiter reached the deadline while it ran and was told it failed: out of step.
                fail(c, c.failure().orElseGet(() -> new CollectiveException(c.describe() + ": abandoned")));
            }
        } catch (CollectiveException e) {
            fail(c, e);
        } catch (RuntimeException | Error e) {
            fail(c, new CollectiveException(c.describe() + " failed: " + e, e));
        } finally {
            current = null;
        }
    }

    private void fail(Call c, CollectiveException e) {
        boolean first = broken == null;
        if (first) {
            broken = e;
        }
        c.fail(e);
        if (first) {
            onFailure.accept(e);
        }
    }

    /** Called by a waiter that reached the deadline before the call finished. */
    private CollectiveException timedOut(Call c) {
        Call running = current;
        String after = c.describe() + ": timed out after " + Duration.ofNanos(c.timeoutNanos);
        if (running == c) {
            return new CollectiveTimeoutException(
                    after + " " + whereRunning.apply(c), null, -1, c.collective, List.of());
        }
        return new CollectiveTimeoutException(
                after + " before it started"
                        + (running == null ? "" : ", queued behind " + running.collective.describe()),
                null,
                -1,
                c.collective,
                List.of());
    }

    /**
     * Whether this thread is a queue's engine thread: the calls it runs were started for later
     * (gradient buckets during backward), and the thread that started them is computing, so a
     * wait in them should leave the CPU at once rather than spin (shm's barrier does).
     */
    public static boolean onEngineThread() {
        return ON_ENGINE.get();
    }

    private static final ThreadLocal<Boolean> ON_ENGINE = ThreadLocal.withInitial(() -> Boolean.FALSE);

    private void engineLoop() {
        ON_ENGINE.set(Boolean.TRUE);
        while (!closing) {
            doWork();
        }
    }

    /**
     * One duty cycle of the engine: runs the oldest queued call if it has waited out its grace
     * period (no awaiting caller took it), and otherwise idles as the class comment says: for the
     * rest of the grace period, for {@link #POLL_NS} while calls keep coming, or until woken once
     * none came for {@link #IDLE_AFTER_NS}. Returns the number of calls it ran (0 or 1). The
     * engine thread loops over it; with {@link Options#stepped()} the owner calls it.
     */
    public int doWork() {
        Call head = queue.peek();
        long now = clock.getAsLong();
        if (head == null) {
            long s = submitted.get();
            if (s != seen) {
                seen = s;
                quietSince = now;
            }
            if (now - quietSince < IDLE_AFTER_NS) {
                idle.idle(pollNanos);
                pollNanos = Math.min(2 * pollNanos, MAX_POLL_NS);
                return 0;
            }
            engineIdle.set(true);
            if (queue.isEmpty() && !closing) {
                idle.idleUntilWoken();
            }
            engineIdle.set(false);
            seen = submitted.get();
            quietSince = clock.getAsLong();
            pollNanos = POLL_NS;
            return 0;
        }
        long age = now - head.issued;
        if (age < GRACE_NS) {
            idle.idle(GRACE_NS - age); // let an awaiting caller run it on its own thread
            return 0;
        }
        if (runner.tryLock()) {
            pollNanos = POLL_NS;
            try {
                runOne();
            } finally {
                runner.unlock();
            }
            return 1;
        }
        idle.idle(GRACE_NS); // a caller is running calls; it may run this one too
        return 0;
    }

    /**
     * Stops the engine, waits up to 10 s for a running call, fails the queued ones and runs
     * {@code cleanup} (under the runner lock when it was had). Returns whether no call was
     * running any more.
     */
    public boolean close(Runnable cleanup) {
        closing = true;
        idle.wake(engine);
        boolean runnerHeld = false;
        try {
            if (engine != null) {
                engine.join(TimeUnit.SECONDS.toMillis(10));
            }
            runnerHeld = runner.tryLock(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try {
            for (Call c; (c = queue.poll()) != null; ) {
                c.fail(new CollectiveException(c.describe() + ": the process group was closed"));
            }
            cleanup.run();
        } finally {
            if (runnerHeld) {
                runner.unlock();
            }
        }
        return runnerHeld;
    }
}
