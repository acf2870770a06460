package dev.cohort.shm;

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
}
