package dev.cohort.data;

import java.util.Arrays;

/**
 * The examples a loader has decoded but not yet batched (those in the shuffle buffer, plus the
 * rest of the last row group read), in reusable slots: one row of features and a label each.
 * Grows by doubling to what the plan needs, which the shuffle buffer bounds.
 */
final class ShuffleSlots {

    private final int width;
    private float[] features;
    private long[] labels;
    private int[] free;
    private int freeCount;
    private int capacity;
    private int peak;

    ShuffleSlots(int width, int initial) {
        this.width = width;
        this.capacity = 0;
        this.features = new float[0];
        this.labels = new long[0];
        this.free = new int[0];
        grow(initial);
    }

    /** Stores row {@code row} of {@code source} and its label; returns the slot. */
    int store(float[] source, int row, long label) {
        if (freeCount == 0) {
            grow(capacity * 2);
        }
        int slot = free[--freeCount];
        peak = Math.max(peak, capacity - freeCount);
        System.arraycopy(source, row * width, features, slot * width, width);
        labels[slot] = label;
        return slot;
    }

    float[] features() {
        return features;
    }

    long label(int slot) {
        return labels[slot];
    }

    /** The most examples held at once so far. */
    int peak() {
        return peak;
    }

    void release(int slot) {
        free[freeCount++] = slot;
    }

    private void grow(int to) {
        features = Arrays.copyOf(features, Math.multiplyExact(to, width));
        labels = Arrays.copyOf(labels, to);
        free = Arrays.copyOf(free, to);
        for (int s = capacity; s < to; s++) {
            free[freeCount++] = s;
        }
        capacity = to;
    }
}
