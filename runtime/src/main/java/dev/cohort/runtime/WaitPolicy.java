package dev.cohort.runtime;

import java.time.Duration;
import java.util.concurrent.locks.LockSupport;

/**
 * How a thread waits for what another thread or process does (a peer's counter, bytes on a
 * socket, an MPI request): it spins with {@link Thread#onSpinWait()} for {@code spinNanos}, then
 * yields the CPU until {@code yieldNanos}, then parks, {@code firstParkNanos} at first and twice
 * as long each time up to {@code longestParkNanos}, never past the deadline; once a wait has lasted
 * {@code stallNanos} it says so, once, so the waiter can report whom it waits for.
 *
 * <p>Time is read from, and parks are made on, a {@link Clock}: {@link Clock#SYSTEM} in use, a
 * clock of their own in tests, which then step time instead of sleeping. Spinning for 0 and
 * yielding for 0 makes a policy that parks from the start.
 *
 * <p>A {@link Wait} follows one wait at a time for one thread and is reused (nothing is allocated
 * per wait): {@link Wait#begin}, then, until the condition holds, {@link Wait#expired},
 * {@link Wait#stalled} and {@link Wait#idle} (or the waiter's own sleep, e.g. in a selector, for
 * {@link Wait#sleepNanos}).
 */
public record WaitPolicy(
        long spinNanos, long yieldNanos, long firstParkNanos, long longestParkNanos, long stallNanos, Clock clock) {

    /** Where waits read the time and sleep. */
    public interface Clock {
        long nanoTime();

        /** Sleeps for at most {@code nanos} (it may return early; the waiter looks again). */
        void park(long nanos);

        /** {@link System#nanoTime()} and {@link LockSupport#parkNanos(long)}. */
        Clock SYSTEM = new Clock() {
            @Override
            public long nanoTime() {
                return System.nanoTime();
            }

            @Override
            public void park(long nanos) {
                LockSupport.parkNanos(this, nanos);
            }

            @Override
            public String toString() {
                return "system clock";
            }
        };
    }

    /** The phases of a wait, in order. */
    public enum Phase {
        SPIN,
        YIELD,
        PARK
    }

    public WaitPolicy {
        if (spinNanos < 0 || yieldNanos < spinNanos || firstParkNanos <= 0 || longestParkNanos < firstParkNanos) {
            throw new IllegalArgumentException("a wait spins, then yields, then parks for a positive, growing time: "
                    + "spin " + spinNanos + " ns, yield until " + yieldNanos + " ns, parks " + firstParkNanos
                    + ".." + longestParkNanos + " ns");
        }
        if (clock == null) {
            throw new IllegalArgumentException("a wait policy needs a clock (Clock.SYSTEM)");
        }
    }

    /** Spins for {@code spin}, yields until {@code yield}, then parks up to {@code longestPark}; reports after {@code stall}. */
    public static WaitPolicy of(Duration spin, Duration yield, Duration longestPark, Duration stall) {
        long longest = longestPark.toNanos();
        return new WaitPolicy(
                spin.toNanos(),
                Math.max(spin.toNanos(), yield.toNanos()),
                Math.min(1_000, longest),
                longest,
                stall.toNanos(),
                Clock.SYSTEM);
    }

    /** This policy on {@code clock}. */
    public WaitPolicy on(Clock clock) {
        return new WaitPolicy(spinNanos, yieldNanos, firstParkNanos, longestParkNanos, stallNanos, clock);
    }

    /** This policy spinning for {@code spinNanos} (and yielding at least as long). */
    public WaitPolicy spinning(long spinNanos) {
        return new WaitPolicy(
                spinNanos, Math.max(spinNanos, yieldNanos), firstParkNanos, longestParkNanos, stallNanos, clock);
    }

    /** A reusable follower of this policy's waits, for one thread. */
    public Wait newWait() {
        return new Wait(this);
    }

    /** One thread's waits, one at a time (see {@link WaitPolicy}). */
    public static final class Wait {
        private final WaitPolicy policy;
        private final Clock clock;
        private long start;
        private long deadline;
        private long phaseFrom;
        private Phase phase;
        private long park;
        private long longestPark;
        private boolean stallSaid;
        private long stallNanos;

        private Wait(WaitPolicy policy) {
            this.policy = policy;
            this.clock = policy.clock;
        }

        /** Starts a wait that ends at {@code deadlineNanos} (on the policy's clock). */
        public Wait begin(long deadlineNanos) {
            start = clock.nanoTime();
            deadline = deadlineNanos;
            stallSaid = false;
            stallNanos = policy.stallNanos;
            moved();
            return this;
        }

        /** This wait reports a stall after {@code nanos} instead of the policy's stall time. */
        public Wait stallAfter(long nanos) {
            stallNanos = nanos;
            return this;
        }

        /** Starts a wait that skips to {@code phase} (a waiter that must not take the CPU starts parking). */
        public Wait begin(long deadlineNanos, Phase phase) {
            begin(deadlineNanos);
            if (phase == Phase.YIELD) {
                phaseFrom = start - policy.spinNanos;
            } else if (phase == Phase.PARK) {
                parkFromNow(policy.longestParkNanos);
            }
            return this;
        }

        /** Something moved: the wait spins again from now (its deadline and stall time still count from its start). */
        public void moved() {
            phaseFrom = clock.nanoTime();
            phase = null;
            park = policy.firstParkNanos;
            longestPark = policy.longestParkNanos;
        }

        /** From now on the wait parks, up to {@code longestParkNanos} each time (e.g. the CPU proved contended). */
        public void parkFromNow(long longestParkNanos) {
            phase = Phase.PARK;
            longestPark = Math.max(policy.firstParkNanos, longestParkNanos);
        }

        /** The phase the wait is in now. */
        public Phase phase() {
            if (phase == Phase.PARK) {
                return phase;
            }
            long in = clock.nanoTime() - phaseFrom;
            return in < policy.spinNanos ? Phase.SPIN : in < policy.yieldNanos ? Phase.YIELD : Phase.PARK;
        }

        /** Spins, yields or parks once, as the phase says; a park never outlasts the deadline. */
        public void idle() {
            switch (phase()) {
                case SPIN -> Thread.onSpinWait();
                case YIELD -> Thread.yield();
                case PARK -> {
                    clock.park(sleepNanos(park));
                    park = Math.min(2 * park, longestPark);
                }
            }
        }

        /** How long a sleep of the waiter's own may last now: at most {@code cap}, until the deadline or the stall report, at least 1 µs. */
        public long sleepNanos(long cap) {
            long now = clock.nanoTime();
            long until = Math.min(deadline - now, stallSaid ? Long.MAX_VALUE : stallNanos - (now - start));
            return Math.max(1_000, Math.min(cap, until));
        }

        /** Whether the deadline has passed. */
        public boolean expired() {
            return clock.nanoTime() - deadline >= 0;
        }

        /** True once per wait, the first time it is asked after the wait has lasted the stall time. */
        public boolean stalled() {
            if (stallSaid || waitedNanos() < stallNanos) {
                return false;
            }
            stallSaid = true;
            return true;
        }

        /** How long this wait has lasted. */
        public long waitedNanos() {
            return clock.nanoTime() - start;
        }

        /** The time on the policy's clock. */
        public long now() {
            return clock.nanoTime();
        }

        public WaitPolicy policy() {
            return policy;
        }
    }
}
