package dev.cohort.torch;

import dev.cohort.libtorch.ScalarTypes;
import dev.cohort.api.collective.BufferAllocator;
import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.api.collective.Work;
import dev.cohort.libtorch.LibTorch;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorBase;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.VoidTensorHook;

/**
 * Averages gradients across ranks, DDP style, overlapping communication with the backward pass.
 *
 * <p>Words: a <em>bucket</em> is one direct buffer holding the flattened gradients of several
 * parameters of one type; parameters are added to the open bucket until it holds at least
 * {@code bucketBytes} (1 MiB for the first bucket, as in DDP), then a new one opens. Parameters are assigned in reverse registration order, the order in which backward usually
 * produces their gradients, so every rank builds the same buckets. An <em>iteration</em> runs from
 * one {@link #averageGradients()} to the next.
 *
 * <p>A gradient hook on each parameter copies the parameter's gradient (plus what {@code .grad}
 * already holds, when gradients accumulate) into its bucket as soon as backward computes it. When
 * a bucket is full its allreduce starts, while backward goes on with earlier layers. Buckets are
 * started strictly in bucket order (a full bucket waits for the ones before it), so all ranks issue
 * the same collectives in the same order. {@link #averageGradients()} packs and starts whatever was
 * not started (parameters unused in this iteration count as zeros, or as their accumulated
 * {@code .grad}), redoes any bucket that backward touched again after it was started (a second
 * backward without a step: accumulation), waits for each bucket in order and writes the averages
 * into the parameters' {@code .grad}. Inside {@link #pauseHooks} scopes hooks do nothing, so
 * accumulation steps cost no communication (DDP's {@code no_sync}).
 *
 * <p>Bucket storage comes from the group's {@link BufferAllocator} where the engine offers one (the
 * shm engine's arena, inside its shared mapping): the bucket tensors then wrap that memory and
 * the allreduce reads and writes it in place, copying nothing in or out. The ranks agree bucket by
 * bucket with one small allreduce at construction (an engine refuses a collective whose buffer is
 * shared on some ranks only); buckets that do not fit everywhere use ordinary direct memory. Each
 * bucket holds its buffer as long as its tensors: the buffer keeps the mapping alive, the tensors
 * (made by {@code from_blob}) do not.
 *
 * <p>All native objects here live as long as the optimizer and are retained against the caller's
 * {@code PointerScope}; the hooks are called by native code and must never be freed while the
 * parameters exist. Per-step temporaries are freed at once by scopes of our own, not left to the
 * garbage collector (which lets native memory grow by gigabytes between collections).
 */
final class GradientBuckets {

    private static final System.Logger LOG = System.getLogger(GradientBuckets.class.getName());

    /** DDP's default bucket size. */
    static final long DEFAULT_BUCKET_BYTES = 25L * 1024 * 1024;
    /** Like DDP, the first bucket (the last layers' gradients, ready first) closes early, so communication starts soon. */
    static final long FIRST_BUCKET_BYTES = 1024 * 1024;

    private final ProcessGroup group;
    private final List<Bucket> buckets = new ArrayList<>();
    private final List<VoidTensorHook> hooks = new ArrayList<>();   // kept reachable: native code calls them
    private int nextToStart;
    private int sharedBuckets;
    private int paused;
    private long startedDuringBackward;

    GradientBuckets(ProcessGroup group, TensorVector parameters, long bucketBytes, boolean overlap) {
        if (bucketBytes < 1) {
            throw new IllegalArgumentException("bucket size must be >= 1 byte, got " + bucketBytes);
        }
        this.group = group;
        List<Tensor> params = new ArrayList<>();
        for (long i = parameters.size() - 1; i >= 0; i--) {
            Tensor p = LibTorch.retain(new Tensor(parameters.get(i)));   // an owning handle, not a view into the vector
            if (p.requires_grad()) {
                params.add(p);
            }
        }
        Bucket open = null;
        for (Tensor p : params) {
            DataType type = ScalarTypes.dataType(p.scalar_type());
            long limit = buckets.size() == 1 ? Math.min(FIRST_BUCKET_BYTES, bucketBytes) : bucketBytes;
            if (open == null || open.type != type || open.bytes >= limit) {
                open = new Bucket(type);
                buckets.add(open);
            }
            open.add(p, p.numel() * type.byteSize());
        }
        allocateStorage(group.allocator());
        if (overlap) {
            for (Bucket b : buckets) {
                for (int slot = 0; slot < b.params.size(); slot++) {
                    registerHook(b, slot);
                }
            }
        }
    }

    /**
     * Takes each bucket's buffer from {@code allocator} where every rank has room for it, else
     * from ordinary direct memory; then makes the bucket tensors over it.
     */
    private void allocateStorage(Optional<BufferAllocator> allocator) {
        if (allocator.isPresent()) {
            BufferAllocator shared = allocator.get();
            int[] everywhere = new int[buckets.size()];
            for (int i = 0; i < buckets.size(); i++) {
                Bucket b = buckets.get(i);
                b.buffer = shared.allocate(b.type, b.count()).orElse(null);
                everywhere[i] = b.buffer == null ? 0 : 1;
            }
            group.allreduce(DenseBuffer.of(everywhere), ReduceOp.MIN).await();
            long missedBytes = 0;
            int missed = 0;
            for (int i = 0; i < buckets.size(); i++) {
                Bucket b = buckets.get(i);
                if (everywhere[i] == 0) {
                    if (b.buffer != null) {
                        shared.release(b.buffer);
                        b.buffer = null;
                    }
                    missed++;
                    missedBytes += b.bytes;
                } else {
                    sharedBuckets++;
                }
            }
            if (missed > 0 && group.rank() == 0) {
                LOG.log(System.Logger.Level.WARNING, String.format("%d of %d gradient buckets (%.1f MiB) do not fit on "
                        + "every rank in %s; their allreduces copy in and out", missed, buckets.size(),
                        missedBytes / 1048576.0, shared.describe()));
            }
        }
        buckets.forEach(Bucket::allocate);
    }

    int bucketCount() {
        return buckets.size();
    }

    /** How many buckets live in memory the group moves in place ({@link ProcessGroup#allocator()}). */
    int sharedBucketCount() {
        return sharedBuckets;
    }

    /** How many bucket allreduces hooks started while backward was running (overlap at work). */
    synchronized long startedDuringBackward() {
        return startedDuringBackward;
    }

    synchronized void pauseHooks() {
        paused++;
    }

    synchronized void resumeHooks() {
        paused--;
    }

    /** Waits for (and where needed starts) every bucket, then writes the averages into {@code .grad}. */
    synchronized void averageGradients() {
        try (PointerScope temporaries = new PointerScope()) {
            for (int i = 0; i < buckets.size(); i++) {
                Bucket b = buckets.get(i);
                if (b.work != null && b.stale) {
                    b.work.await();                 // superseded by accumulated gradients: redo it
                    b.work = null;
                }
                if (b.work == null) {
                    b.packMissing();
                    b.work = group.allreduce(b.buffer, ReduceOp.AVG);
                }
            }
            for (Bucket b : buckets) {
                b.work.await();
                b.unpack();
            }
        } finally {
            for (Bucket b : buckets) {
                b.reset();
            }
            nextToStart = 0;
        }
    }

    private void registerHook(Bucket bucket, int slot) {
        VoidTensorHook hook = new VoidTensorHook() {
            @Override
            public void call(TensorBase grad) {
                try (PointerScope temporaries = new PointerScope()) {
                    onGradient(bucket, slot, new Tensor(grad));
                }
            }
        };
        hooks.add(LibTorch.retain(hook));
        bucket.params.get(slot).register_hook(hook);
    }

    private synchronized void onGradient(Bucket bucket, int slot, Tensor grad) {
        if (paused > 0) {
            return;
        }
        if (bucket.work != null) {
            bucket.stale = true;              // accumulation without a step: the step redoes it
            return;
        }
        Tensor accumulated = bucket.params.get(slot).grad();
        if (accumulated.defined()) {
            bucket.views.get(slot).copy_(accumulated.add(grad));
        } else {
            bucket.views.get(slot).copy_(grad);
        }
        if (!bucket.ready[slot]) {
            bucket.ready[slot] = true;
            bucket.readyCount++;
        }
        while (nextToStart < buckets.size() && buckets.get(nextToStart).isFull()) {
            Bucket next = buckets.get(nextToStart++);
            next.work = group.allreduce(next.buffer, ReduceOp.AVG);
            startedDuringBackward++;
        }
    }

    /** One flat buffer and the parameters laid out in it. */
    private static final class Bucket {
        final DataType type;
        final List<Tensor> params = new ArrayList<>();
        final List<long[]> ranges = new ArrayList<>();   // {offset, count} in elements
        final List<Tensor> views = new ArrayList<>();
        long bytes;
        DenseBuffer buffer;
        Tensor flat;
        boolean[] ready;
        int readyCount;
        boolean stale;
        Work work;

        Bucket(DataType type) {
            this.type = type;
        }

        void add(Tensor p, long paramBytes) {
            ranges.add(new long[] {bytes / type.byteSize(), p.numel()});
            params.add(p);
            bytes += paramBytes;
        }

        int count() {
            return Math.toIntExact(bytes / type.byteSize());
        }

        /** Makes the bucket tensors over {@code buffer}, first allocating it as direct memory if it has none. */
        void allocate() {
            if (buffer == null) {
                buffer = DenseBuffer.allocateDirect(type, count());
            }
            flat = LibTorch.retain(TensorBuffers.tensor(buffer));
            for (int i = 0; i < params.size(); i++) {
                long[] r = ranges.get(i);
                views.add(LibTorch.retain(flat.narrow(0, r[0], r[1]).view(params.get(i).sizes().vec().get())));
            }
            ready = new boolean[params.size()];
        }

        boolean isFull() {
            return readyCount == params.size();
        }

        /** Fills the slots no hook filled this iteration from {@code .grad} (zeros when undefined). */
        void packMissing() {
            for (int i = 0; i < params.size(); i++) {
                if (ready[i] && !stale) {
                    continue;
                }
                Tensor grad = params.get(i).grad();
                if (grad.defined()) {
                    views.get(i).copy_(grad);
                } else {
                    views.get(i).zero_();
                }
            }
        }

        void unpack() {
            for (int i = 0; i < params.size(); i++) {
                Tensor p = params.get(i);
                Tensor grad = p.grad();
                if (grad.defined()) {
                    grad.copy_(views.get(i));
                } else {
                    p.mutable_grad().put(views.get(i).clone());
                }
            }
        }

        void reset() {
            java.util.Arrays.fill(ready, false);
            readyCount = 0;
            stale = false;
            work = null;
        }
    }
}
