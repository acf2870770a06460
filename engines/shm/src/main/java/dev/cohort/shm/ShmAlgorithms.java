package dev.cohort.shm;

import dev.cohort.runtime.CallQueue;

/**
 * What the shm algorithms of one rank share: the steps they take ({@link ShmSteps}), this rank's
 * arena, and the group's size and this rank.
 */
abstract class ShmAlgorithms {

    final ShmSteps steps;
    /** This rank's arena, or null when --shm-arena-mib is 0. */
    final ShmArena arena;

    final int n;
    final int me;

    ShmAlgorithms(ShmSteps steps, ShmArena arena) {
        this.steps = steps;
        this.arena = arena;
        this.n = steps.n;
        this.me = steps.me;
    }

    /**
     * Whether {@code t} has no data to move between ranks (no elements, or a group of one); it
     * is then only a synchronising step, taken here.
     */
    final boolean onlySynchronises(CallQueue.Call t) {
        if (t.collective().input().count() == 0 || n == 1) {
            steps.sync(t, true);
            return true;
        }
        return false;
    }
}
