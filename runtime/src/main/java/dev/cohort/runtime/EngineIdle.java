package dev.cohort.runtime;

import java.util.concurrent.locks.LockSupport;

/**
 * How a {@link CallQueue}'s engine waits between duty cycles, and how a submitter wakes it: the
 * idle strategy, pluggable so that a test can step the engine with
 * {@link CallQueue#doWork()} and a clock of its own instead of sleeping. It parks on
 * {@link WaitPolicy.Clock#SYSTEM}, as the engines' other waits do.
 */
public interface EngineIdle {

    /** Parks the engine thread; a call wakes it with {@link LockSupport#unpark}. */
    EngineIdle PARKING = new EngineIdle() {
        @Override
        public void idle(long nanos) {
            WaitPolicy.Clock.SYSTEM.park(nanos);
        }

        @Override
        public void idleUntilWoken() {
            LockSupport.park(this);
        }

        @Override
        public void wake(Thread engine) {
            LockSupport.unpark(engine);
        }

        @Override
        public String toString() {
            return "CallQueue engine idle";
        }
    };

    /** Waits at most {@code nanos}, or until {@link #wake woken}. */
    void idle(long nanos);

    /** Waits until {@link #wake woken} (it may return early; the engine looks again). */
    void idleUntilWoken();

    /** Wakes the engine; {@code engine} is its thread, null when the owner steps the engine itself. */
    void wake(Thread engine);
}
