package dev.cohort.runtime;

import dev.cohort.api.collective.BufferAllocator;
import dev.cohort.api.collective.ProcessGroup;
import java.time.Duration;
import java.util.Optional;

/** A group seen with another timeout; shares everything else, closing it closes the group. */
final class TimeoutView extends TimedCalls {
    private final AbstractProcessGroup group;
    private final Duration timeout;

    TimeoutView(AbstractProcessGroup group, Duration timeout) {
        this.group = group;
        this.timeout = timeout;
    }

    @Override
    AbstractProcessGroup engine() {
        return group;
    }

    @Override
    public int rank() {
        return group.rank();
    }

    @Override
    public int size() {
        return group.size();
    }

    @Override
    public Duration timeout() {
        return timeout;
    }

    @Override
    public ProcessGroup withTimeout(Duration t) {
        return new TimeoutView(group, AbstractProcessGroup.checkTimeout(t));
    }

    @Override
    public Optional<ProcessGroup> split(int color, int key) {
        return group.split(color, key);
    }

    @Override
    public Optional<ProcessGroup> newGroup(int... ranks) {
        return group.newGroup(ranks);
    }

    @Override
    public java.util.Optional<BufferAllocator> allocator() {
        return group.allocator();
    }

    @Override
    public void close() {
        group.close();
    }

    @Override
    public String toString() {
        return group + " (timeout " + timeout + ")";
    }
}
