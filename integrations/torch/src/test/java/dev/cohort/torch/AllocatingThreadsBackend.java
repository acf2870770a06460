package dev.cohort.torch;

import dev.cohort.api.Connection;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.collective.BufferAllocator;
import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.api.collective.Work;
import dev.cohort.runtime.threads.ThreadsBackend;
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
        return new Connection(inner.topology(), new WithAllocator(inner.group(), allocator), inner.nodeGroup(), inner);
    }

    /** A group that offers {@code allocator}; everything else is the wrapped group's. */
    private record WithAllocator(ProcessGroup group, BufferAllocator shared) implements ProcessGroup {
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
            return group.timeout();
        }

        @Override
        public ProcessGroup withTimeout(Duration t) {
            return new WithAllocator(group.withTimeout(t), shared);
        }

        @Override
        public Work allreduce(DenseBuffer d, ReduceOp op) {
            return group.allreduce(d, op);
        }

        @Override
        public Work broadcast(DenseBuffer d, int root) {
            return group.broadcast(d, root);
        }

        @Override
        public Work allgather(DenseBuffer i, DenseBuffer o) {
            return group.allgather(i, o);
        }

        @Override
        public Work allgatherv(DenseBuffer i, DenseBuffer o, int[] c) {
            return group.allgatherv(i, o, c);
        }

        @Override
        public Work reduceScatter(DenseBuffer i, DenseBuffer o, ReduceOp op) {
            return group.reduceScatter(i, o, op);
        }

        @Override
        public Work barrier() {
            return group.barrier();
        }

        @Override
        public Work reduce(DenseBuffer d, ReduceOp op, int root) {
            return group.reduce(d, op, root);
        }

        @Override
        public Work gather(DenseBuffer i, DenseBuffer o, int root) {
            return group.gather(i, o, root);
        }

        @Override
        public Work gatherv(DenseBuffer i, DenseBuffer o, int[] c, int root) {
            return group.gatherv(i, o, c, root);
        }

        @Override
        public Work scatter(DenseBuffer i, DenseBuffer o, int root) {
            return group.scatter(i, o, root);
        }

        @Override
        public Work scatterv(DenseBuffer i, DenseBuffer o, int[] c, int root) {
            return group.scatterv(i, o, c, root);
        }

        @Override
        public Work alltoall(DenseBuffer i, DenseBuffer o) {
            return group.alltoall(i, o);
        }

        @Override
        public Work alltoallv(DenseBuffer i, int[] s, DenseBuffer o, int[] r) {
            return group.alltoallv(i, s, o, r);
        }

        @Override
        public Work send(DenseBuffer d, int peer, int tag) {
            return group.send(d, peer, tag);
        }

        @Override
        public Work recv(DenseBuffer d, int peer, int tag) {
            return group.recv(d, peer, tag);
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
        public Optional<BufferAllocator> allocator() {
            return Optional.of(shared);
        }

        @Override
        public void close() {
            group.close();
        }
    }
}
