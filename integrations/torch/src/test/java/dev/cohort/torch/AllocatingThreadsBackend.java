package dev.cohort.torch;

import dev.cohort.api.Connection;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.collective.BufferAllocator;
import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.runtime.threads.ThreadsBackend;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The threads engine (initialize inside {@code ThreadsWorld.run}) whose world group offers a test
 * {@link BufferAllocator}: direct buffers, except on rank {@code refusingRank}, which has no room
 * (-1: every rank has room). For the gradient buckets' agreement on where their storage lives.
 */
final class AllocatingThreadsBackend extends DistributedBackend {

    private final int refusingRank;
    private final AtomicInteger allocated = new AtomicInteger();
    private final AtomicInteger released = new AtomicInteger();

    AllocatingThreadsBackend(int refusingRank) {
        this.refusingRank = refusingRank;
    }

    int allocated() {
        return allocated.get();
    }

    int released() {
        return released.get();
    }

    @Override
    public String name() {
        return "threads-with-allocator";
    }

    @Override
    public boolean isAvailable() {
        return true;
    }

    @Override
    protected Connection connect() {
        ThreadsBackend inner = new ThreadsBackend();
        inner.initialize();
        BufferAllocator allocator = new BufferAllocator() {
            @Override
            public Optional<DenseBuffer> allocate(DataType type, int count) {
                if (inner.rank() == refusingRank) {
                    return Optional.empty();
                }
                allocated.incrementAndGet();
                return Optional.of(DenseBuffer.allocateDirect(type, count));
            }

            @Override
            public void release(DenseBuffer buffer) {
                released.incrementAndGet();
            }

            @Override
            public String describe() {
                return "the test allocator";
            }
        };
        return new Connection(inner.topology(), withAllocator(inner.group(), allocator), inner.nodeGroup(), inner);
    }

    /** {@code group} offering {@code shared} as its allocator; every other call is the wrapped group's. */
    private static ProcessGroup withAllocator(ProcessGroup group, BufferAllocator shared) {
        return (ProcessGroup) Proxy.newProxyInstance(
                ProcessGroup.class.getClassLoader(), new Class<?>[] {ProcessGroup.class}, (proxy, method, args) -> {
                    switch (method.getName()) {
                        case "allocator":
                            return Optional.of(shared);
                        case "withTimeout":
                            return withAllocator(group.withTimeout((Duration) args[0]), shared);
                        default:
                            try {
                                return method.invoke(group, args);
                            } catch (InvocationTargetException e) {
                                throw e.getCause();
                            }
                    }
                });
    }
}
