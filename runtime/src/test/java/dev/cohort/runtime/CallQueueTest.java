package dev.cohort.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.CollectiveException;
import dev.cohort.api.collective.CollectiveTimeoutException;
import dev.cohort.api.collective.OpKind;
import dev.cohort.api.collective.Work;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The execution model shared by the shm and hierarchical engines, in one JVM. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class CallQueueTest {

    private final List<CollectiveException> failures = Collections.synchronizedList(new ArrayList<>());
    private final CallQueue queue = new CallQueue("test-queue", c -> "inside the test body", failures::add);
    private long sequence;

    @AfterEach
    void close() {
        queue.close(() -> {});
    }

    private Work submit(Duration timeout, CallQueue.Body body) {
        return queue.submit(
                "test rank 0 of 1",
                new Collective(OpKind.BARRIER, sequence++, null, null, null, -1, null),
                timeout,
                body);
    }

    private Work submit(CallQueue.Body body) {
        return submit(Duration.ofSeconds(10), body);
    }

    @Test
    void awaitingTheLastCallRunsEveryEarlierOneInIssueOrder() {
        List<Integer> order = Collections.synchronizedList(new ArrayList<>());
        List<Thread> threads = Collections.synchronizedList(new ArrayList<>());
        List<Work> works = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            int k = i;
            works.add(submit(c -> {
                order.add(k);
                threads.add(Thread.currentThread());
            }));
        }
        works.get(4).await();
        assertThat(order).containsExactly(0, 1, 2, 3, 4);
        assertThat(works).allMatch(Work::isDone);
        // The caller that awaits runs them, or the engine thread if they waited past the grace period.
        assertThat(threads)
                .allMatch(t -> t == Thread.currentThread() || t.getName().equals("test-queue"));
    }

    @Test
    void aQueueForCallersOnlyHasNoEngineThreadAndRunsEachCallOnTheThreadThatAwaitsIt() throws Exception {
        long[] now = {0};
        CallQueue callers = new CallQueue(
                "test-callers-only",
                c -> "inside the test body",
                failures::add,
                new CallQueue.Options().clock(() -> now[0]).callersOnly());
        try {
            assertThat(Thread.getAllStackTraces().keySet())
                    .noneMatch(t -> t.getName().equals("test-callers-only"));
            AtomicReference<Thread> ranOn = new AtomicReference<>();
            Work work = callers.submit(
                    "test rank 0 of 1",
                    new Collective(OpKind.BARRIER, 0, null, null, null, -1, null),
                    Duration.ofSeconds(10),
                    c -> ranOn.set(Thread.currentThread()));
            // Past the grace period and several of an engine's polls on the queue's clock, nothing has run it...
            now[0] += CallQueue.GRACE_NS + 2 * CallQueue.POLL_NS + 1;
            assertThat(work.isDone()).isFalse();
            // ...until its caller awaits it, and runs it.
            work.await();
            assertThat(ranOn.get()).isSameAs(Thread.currentThread());
            assertThat(failures).isEmpty();
        } finally {
            callers.close(() -> {});
        }
    }

    @Test
    void aCallNobodyAwaitsIsRunByTheEngineThread() throws Exception {
        AtomicReference<Thread> ranOn = new AtomicReference<>();
        Work work = submit(c -> ranOn.set(Thread.currentThread()));
        long t0 = System.nanoTime();
        while (!work.isDone()) {
            assertThat(System.nanoTime() - t0).isLessThan(TimeUnit.SECONDS.toNanos(5));
            Thread.onSpinWait();
        }
        assertThat(ranOn.get().getName()).isEqualTo("test-queue");
    }

    /**
     * The engine's duty cycle, stepped on this thread with a clock of the test's own: a call nobody
     * awaits waits out its grace period and then runs; with no calls the engine polls, from every
     * POLL_NS up to every MAX_POLL_NS, until IDLE_AFTER_NS passed, then idles until woken, and the
     * next call wakes it.
     */
    @Test
    void steppedTheEngineRunsACallNobodyAwaitsAfterItsGraceAndIdlesUntilTheNextCallWakesIt() {
        long[] now = {1_000_000_000L};
        List<String> idles = new ArrayList<>();
        List<Runnable> whileParked = new ArrayList<>();
        EngineIdle stepping = new EngineIdle() {
            @Override
            public void idle(long nanos) {
                idles.add("idle " + nanos);
                now[0] += nanos;
            }

            @Override
            public void idleUntilWoken() {
                idles.add("until woken");
                whileParked.forEach(Runnable::run);
            }

            @Override
            public void wake(Thread engine) {
                assertThat(engine).isNull();
                idles.add("woken");
            }
        };
        CallQueue stepped = new CallQueue(
                "stepped",
                c -> "inside the test body",
                failures::add,
                new CallQueue.Options().clock(() -> now[0]).idle(stepping).stepped());
        try {
            List<Work> works = new ArrayList<>();
            List<Integer> ran = new ArrayList<>();
            Runnable submitOne = () -> {
                int k = works.size();
                works.add(stepped.submit(
                        "test rank 0 of 1",
                        new Collective(OpKind.BARRIER, k, null, null, null, -1, null),
                        Duration.ofSeconds(10),
                        c -> ran.add(k)));
            };
            submitOne.run();
            whileParked.add(submitOne); // a call comes while the engine idles until woken
            for (int round = 0; round < 2; round++) {
                idles.clear();
                assertThat(stepped.doWork()).as("within its grace period").isZero();
                assertThat(ran).hasSize(round);
                assertThat(stepped.doWork()).as("after its grace period").isEqualTo(1);
                assertThat(ran).hasSize(round + 1);
                assertThat(works.get(round).isDone()).isTrue();
                assertThat(idles).containsExactly("idle " + CallQueue.GRACE_NS);
                idles.clear();
                // No call comes: the engine polls, doubling its period up to MAX_POLL_NS (it ran none of them).
                List<String> polls = new ArrayList<>();
                for (long quiet = 0, period = CallQueue.POLL_NS;
                        quiet < CallQueue.IDLE_AFTER_NS;
                        quiet += period, period = Math.min(2 * period, CallQueue.MAX_POLL_NS)) {
                    polls.add("idle " + period);
                    assertThat(stepped.doWork()).isZero();
                }
                assertThat(idles).containsExactlyElementsOf(polls);
                idles.clear();
                assertThat(stepped.doWork()).isZero();
                assertThat(idles).containsExactly("until woken", "woken");
            }
        } finally {
            stepped.close(() -> {});
        }
    }

    @Test
    void afterAFailureLaterCallsFailNamingTheFirstAndTheGroupIsToldOnce() {
        Work bad = submit(c -> {
            throw new CollectiveException(c.describe() + ": peer rank 1 left");
        });
        Work later = submit(c -> {});
        assertThatThrownBy(bad::await).hasMessageContaining("barrier #0").hasMessageContaining("peer rank 1 left");
        assertThatThrownBy(later::await)
                .hasMessageContaining("barrier #1")
                .hasMessageContaining("unusable after an earlier failure")
                .hasMessageContaining("peer rank 1 left");
        assertThat(failures).hasSize(1);
    }

    @Test
    void aTimeoutSaysWhetherTheCallWasRunningOrStillQueuedBehindAnother() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch inside = new CountDownLatch(1);
        Work stuck = submit(Duration.ofMillis(300), c -> {
            inside.countDown();
            try {
                release.await(5, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        Work queued = submit(Duration.ofMillis(300), c -> {});
        Thread runner = new Thread(() -> {
            try {
                stuck.await();
            } catch (CollectiveException expected) {
                // checked below through failure()
            }
        });
        runner.start();
        assertThat(inside.await(5, TimeUnit.SECONDS)).isTrue();
        assertThatThrownBy(queued::await)
                .isInstanceOf(CollectiveTimeoutException.class)
                .hasMessageContaining("barrier #1")
                .hasMessageContaining("before it started")
                .hasMessageContaining("queued behind barrier #0");
        assertThatThrownBy(() -> stuck.await(Duration.ofSeconds(1)))
                .isInstanceOf(CollectiveTimeoutException.class)
                .hasMessageContaining("barrier #0")
                .hasMessageContaining("timed out after PT0.3S inside the test body");
        release.countDown();
        runner.join(5_000);
        // The call finished after its waiter was told it failed: the ranks are out of step, the queue is broken.
        assertThatThrownBy(submit(c -> {})::await).hasMessageContaining("unusable after an earlier failure");
    }

    @Test
    void aRunningCallThatFailsByItselfJustAfterItsDeadlineIsReportedInItsOwnWords() throws Exception {
        CountDownLatch inside = new CountDownLatch(1);
        Work call = submit(Duration.ofMillis(300), c -> {
            inside.countDown();
            try {
                Thread.sleep(500); // e.g. a hier rank getting its leader's verdict just after the deadline
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            throw new CollectiveTimeoutException(c.describe() + ": the leader says rank 3 stopped", null);
        });
        assertThat(inside.await(5, TimeUnit.SECONDS)).isTrue(); // the engine thread runs it, not this one
        assertThatThrownBy(() -> call.await(Duration.ofSeconds(5)))
                .isInstanceOf(CollectiveTimeoutException.class)
                .hasMessageContaining("the leader says rank 3 stopped");
    }

    @Test
    void closingWaitsForTheRunningCallThenFailsTheQueuedOnesAndRunsTheCleanup() throws Exception {
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        Work running = submit(c -> {
            inside.countDown();
            try {
                release.await(5, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        Thread runner = new Thread(running::await);
        runner.start();
        assertThat(inside.await(5, TimeUnit.SECONDS)).isTrue();
        Work queued = submit(c -> {});
        Thread engine = Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().equals("test-queue"))
                .findFirst()
                .orElseThrow();
        Thread releaser = new Thread(() -> {
            try {
                engine.join(5_000); // close() stops the engine before it waits for the running call
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            release.countDown();
        });
        releaser.start();
        List<String> cleaned = new ArrayList<>();
        assertThat(queue.close(() -> cleaned.add("region closed")))
                .as("no call running at the end")
                .isTrue();
        assertThat(cleaned).containsExactly("region closed");
        assertThat(running.isDone()).isTrue();
        assertThat(running.failure()).isEmpty();
        assertThatThrownBy(queued::await)
                .hasMessageContaining("barrier #1")
                .hasMessageContaining("the process group was closed");
        runner.join(5_000);
        releaser.join(5_000);
    }
}
