package dev.cohort.torch;

import dev.cohort.api.DistributedBackend;
import dev.cohort.api.collective.BufferAllocator;
import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.api.collective.Work;
import dev.cohort.libtorch.LibTorch;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
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
 * {@code bucketBytes} (1 MiB for the first bucket when overlapping, as in DDP), then a new one
 * opens. An <em>iteration</em> runs from one {@link #averageGradients()} to the next.
 *
 * <p>Without overlap every bucket is averaged at the step: packed, started and awaited one after
 * the other, so each call runs on the calling thread and never waits for a hand-off to the
 * engine's thread (a second queued call would wake it, and on a host with no spare CPU the woken
 * thread competes with the caller); no small first bucket is needed then, so a model under
 * {@code bucketBytes} is averaged in one call.
 *
 * <p>Order: the first iteration assigns parameters in reverse registration order, the order in
 * which backward usually produces their gradients. It records the order in which gradients
 * actually become ready; at its end every rank takes the root's record and rebuilds its buckets
 * in that order, once (DDP's rebuilt buckets), so every rank keeps the same buckets and later
 * buckets fill in the order backward fills them.
 *
 * <p>A gradient hook on each parameter copies the parameter's gradient (plus what {@code .grad}
 * already holds, when gradients accumulate) into its bucket as soon as backward computes it. When
 * a bucket is full its allreduce starts, while backward goes on with earlier layers. Buckets are
 * started strictly in bucket order (a full bucket waits for the ones before it), so all ranks issue
 * the same collectives in the same order. {@link #averageGradients()} packs and starts whatever was
 * not started (parameters unused in this iteration count as zeros, or as their accumulated
 * {@code .grad}), redoes any bucket that backward touched again after it was started (a second
 * backward without a step: accumulation) and waits for each bucket in order.
 *
 * <p>Gradients live in their buckets (DDP's {@code gradient_as_bucket_view}): after averaging,
 * each parameter's {@code .grad} is its view into the bucket, so nothing is copied out. The next
 * {@code zero_grad} sets {@code .grad} to none ({@link DistributedOptimizer} always does), backward
 * makes a fresh gradient and the hook copies it in: one copy per parameter and step, none when the
 * engine reduces the bucket in place. If {@code .grad} still is the view when backward runs (the
 * gradients were zeroed in place, or not at all), autograd adds into the view after the hook; such
 * a bucket is started at the step instead, without overlap.
 *
 * <p>Unused parameters: a parameter without a gradient on a rank (its layer did not run there)
 * counts as a zero gradient in the average. With {@code findUnused} (DDP's
 * {@code find_unused_parameters}) the ranks also agree, with one small allreduce per step, which
 * parameters had no gradient on any rank; those keep no gradient, as in a single process, so the
 * optimizer leaves them alone (momentum and weight decay included). Without it such a parameter
 * gets a zero gradient, which optimizers with momentum or weight decay still apply; a rank logs
 * once when it first sees a parameter without a gradient.
 *
 * <p>Compression (PyTorch's bf16 and fp16 compress hooks): with a 16-bit {@code compression}
 * type, each float32 bucket is divided by the world size, rounded to 16 bits into a copy of half
 * the size, summed across ranks in that type and widened back into the bucket: half the bytes on
 * the wire, at 16-bit precision for the averaged gradients.
 *
 * <p>Inside {@link #pauseHooks} scopes hooks do nothing, so accumulation steps cost no
 * communication (DDP's {@code no_sync}). A group of one rank has nothing to average: no buckets,
 * no hooks, no copies.
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
 * parameters exist ({@link LiveHooks}). Per-step temporaries are freed at once by scopes of our own, not left to the
 * garbage collector (which lets native memory grow by gigabytes between collections).
 */
final class GradientBuckets implements GradientAverager {

    private static final System.Logger LOG = System.getLogger(GradientBuckets.class.getName());

    /** DDP's default bucket size. */
    static final long DEFAULT_BUCKET_BYTES = 25L * 1024 * 1024;
    /** Like DDP, the first bucket (the last layers' gradients, ready first) closes early, so communication starts soon. */
    static final long FIRST_BUCKET_BYTES = 1024 * 1024;

    private final ProcessGroup group;
    private final long bucketBytes;
    private final boolean overlap;
    private final UnusedParameters unused;
    /** The 16-bit type float32 buckets travel as, or null to send them as they are. */
    private final DataType compression;

    /** Run before the first bucket of an iteration starts (see {@link #announceBefore}), or null. */
    private Runnable announce;

    private boolean announced;
    /** The parameters that take gradients, in reverse registration order; a parameter's index here is its id. */
    private final List<Tensor> params = new ArrayList<>();

    private List<GradientBucket> buckets = new ArrayList<>();
    /** Where each parameter id lives: its bucket and its slot there. */
    private int[] bucketOf;

    private int[] slotOf;
    /** The first iteration's order of ready gradients (parameter ids); null once the buckets were rebuilt. */
    private List<Integer> readyOrder = new ArrayList<>();

    private int nextToStart;
    private int sharedBuckets;
    private int paused;
    /** Gradients the hooks were called with so far (paused or not): a backward pass ran when it grows. */
    private long gradientsSeen;

    private long startedDuringBackward;
    private long finishedDuringBackward;
    private long waitedNanos;
    private long waitedInHooksNanos;

    GradientBuckets(ProcessGroup group, TensorVector parameters, long bucketBytes, boolean overlap) {
        this(group, parameters, bucketBytes, overlap, false, null);
    }

    /**
     * @param compression {@link DataType#BFLOAT16} or {@link DataType#FLOAT16} to send float32
     *                    buckets as 16-bit floats (halving the bytes on the wire), or null
     */
    GradientBuckets(
            ProcessGroup group,
            TensorVector parameters,
            long bucketBytes,
            boolean overlap,
            boolean findUnused,
            DataType compression) {
        if (compression != null && !compression.isHalfPrecision()) {
            throw new IllegalArgumentException(
                    "gradients are compressed to float16 or bfloat16, not " + compression.label());
        }
        this.compression = compression;
        if (bucketBytes < 1) {
            throw new IllegalArgumentException("bucket size must be >= 1 byte, got " + bucketBytes);
        }
        this.group = group;
        this.bucketBytes = bucketBytes;
        this.overlap = overlap;
        this.unused = new UnusedParameters(findUnused, group.rank());
        for (long i = parameters.size() - 1; i >= 0; i--) {
            Tensor p = LibTorch.retain(new Tensor(parameters.get(i))); // an owning handle, not a view into the vector
            if (p.requires_grad()) {
                if (group.size() > 1) {
                    TensorBuffers.checkMovable(p, "parameter " + i + " of the optimizer");
                }
                params.add(p);
            }
        }
        if (group.size() == 1) {
            readyOrder = null;
            return; // nothing to average: the parameters' own gradients are the average
        }
        int[] identity = new int[params.size()];
        Arrays.setAll(identity, i -> i);
        buckets = layOut(identity);
        if (overlap) {
            for (int id = 0; id < params.size(); id++) {
                registerHook(id);
            }
        } else {
            readyOrder = null;
        }
    }

    /** Buckets for the parameters in {@code order} (ids), with their storage; sets where each parameter lives. */
    private List<GradientBucket> layOut(int[] order) {
        long first = overlap ? Math.min(FIRST_BUCKET_BYTES, bucketBytes) : bucketBytes;
        List<GradientBucket> laidOut = BucketLayout.cut(params, order, first, bucketBytes);
        bucketOf = new int[params.size()];
        slotOf = new int[params.size()];
        for (int b = 0; b < laidOut.size(); b++) {
            List<Integer> ids = laidOut.get(b).ids;
            for (int slot = 0; slot < ids.size(); slot++) {
                bucketOf[ids.get(slot)] = b;
                slotOf[ids.get(slot)] = slot;
            }
        }
        sharedBuckets = BucketLayout.allocate(group, laidOut, compression);
        return laidOut;
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

    /**
     * How long the training thread has been held by communication so far: starting allreduces
     * from the hooks (all of it, for an engine that runs the collective in the caller) and
     * waiting for them at the step. Communication that overlapped backward is not in it.
     */
    @Override
    public synchronized long communicationWaitNanos() {
        return waitedNanos;
    }

    /**
     * How many bucket allreduces started during backward had finished by the time the step
     * began: communication that ran entirely inside backward (overlap, measured).
     */
    synchronized long finishedDuringBackward() {
        return finishedDuringBackward;
    }

    /** The part of {@link #communicationWaitNanos()} spent starting allreduces from the hooks, inside backward. */
    synchronized long waitedInHooksNanos() {
        return waitedInHooksNanos;
    }

    /**
     * The parameter ids (reverse registration order) in the order the buckets hold them: 0, 1, 2…
     * until the first iteration ends, then backward's order where it differed.
     */
    synchronized int[] parameterOrder() {
        int[] order = new int[params.size()];
        int n = 0;
        for (GradientBucket b : buckets) {
            for (int id : b.ids) {
                order[n++] = id;
            }
        }
        return order;
    }

    /** The bytes one step's allreduces carry per rank: the buckets', or their 16-bit copies' where compressed. */
    synchronized long bytesPerStep() {
        long bytes = 0;
        for (GradientBucket b : buckets) {
            bytes += b.wireBytes();
        }
        return bytes;
    }

    /** How many gradients the hooks have seen (none without overlap): grows while backward runs. */
    @Override
    public synchronized long gradientsSeen() {
        return gradientsSeen;
    }

    /**
     * Lets go of the group for good: the hooks do nothing from now on, every gradient that lives in
     * a bucket moves to memory of its own (a copy), and the buckets are freed (their memory may be
     * the group's, e.g. shm's arena). For an elastic job whose group is re-formed: call before the
     * old group closes.
     */
    synchronized void retire() {
        paused++;
        try (PointerScope temporaries = new PointerScope()) {
            for (GradientBucket b : buckets) {
                for (int i = 0; i < b.params.size(); i++) {
                    Tensor p = b.params.get(i);
                    if (FlatBuffer.sameMemory(p.grad(), b.view(i))) {
                        p.mutable_grad().put(b.view(i).clone());
                    }
                }
            }
        }
        for (GradientBucket b : buckets) {
            try {
                b.free();
            } catch (RuntimeException e) {
                // the group that lent the memory is broken: what it lent goes with it
            }
        }
        buckets = List.of();
    }

    @Override
    public synchronized void pauseHooks() {
        paused++;
    }

    @Override
    public synchronized void resumeHooks() {
        paused--;
    }

    @Override
    public ProcessGroup group() {
        return group;
    }

    @Override
    public synchronized void announceBefore(Runnable announce) {
        this.announce = announce;
        this.announced = false;
    }

    /** Scales every bucket: each gradient is a view into one. */
    @Override
    public synchronized void scaleAveraged(double factor) {
        try (PointerScope temporaries = new PointerScope()) {
            for (Tensor averaged : averaged()) {
                averaged.mul_(new org.bytedeco.pytorch.Scalar(factor));
            }
        }
    }

    /** The tensors that hold the averaged gradients: the buckets, or on one rank the gradients themselves. */
    private List<Tensor> averaged() {
        if (group.size() > 1) {
            return buckets.stream().map(b -> b.storage.flat).toList();
        }
        return params.stream().map(Tensor::grad).filter(Tensor::defined).toList();
    }

    @Override
    public synchronized boolean averagedFinite() {
        try (PointerScope temporaries = new PointerScope()) {
            return averaged().stream().allMatch(LossScaler::finite);
        }
    }

    /** Sets the gradients of the parameters with buckets to none. */
    @Override
    public synchronized void clearGradients() {
        try (PointerScope temporaries = new PointerScope()) {
            for (Tensor p : params) {
                if (p.grad().defined()) {
                    p.mutable_grad().put(new Tensor());
                }
            }
        }
    }

    /** Waits for (and where needed starts) every bucket; then each parameter's {@code .grad} is its averaged view. */
    @Override
    public synchronized void averageGradients() {
        if (buckets.isEmpty()) {
            return;
        }
        long began = System.nanoTime();
        for (GradientBucket b : buckets) {
            if (b.work != null && !b.stale && b.work.isDone()) {
                finishedDuringBackward++;
            }
        }
        try (PointerScope temporaries = new PointerScope()) {
            int[] used = unused.usedHere(buckets, params.size());
            for (int i = 0; i < buckets.size(); i++) {
                GradientBucket b = buckets.get(i);
                if (b.work != null && b.stale) {
                    b.work.await(); // superseded by accumulated gradients: redo it
                    b.work = null;
                }
                if (b.work == null) {
                    b.packMissing();
                    b.event = BucketEvent.begin(i, b, false);
                    b.work = start(b);
                    if (!overlap) {
                        finish(b); // one call at a time, run by this thread: no hand-off
                    }
                }
            }
            Work usedAnywhere = unused.find ? group.allreduce(DenseBuffer.of(used), ReduceOp.MAX) : null;
            // The last bucket first: a caller that awaits runs every queued call up to its own on
            // its own thread, rather than leaving the earlier ones to the engine's thread.
            if (usedAnywhere != null) {
                usedAnywhere.await();
            }
            for (int i = buckets.size() - 1; overlap && i >= 0; i--) {
                finish(buckets.get(i)); // without overlap each was finished as it started
            }
            for (GradientBucket b : buckets) {
                b.pointGradients(unused.find ? used : null);
            }
        } finally {
            for (GradientBucket b : buckets) {
                b.reset();
            }
            nextToStart = 0;
            announced = false;
            waitedNanos += System.nanoTime() - began;
        }
        if (readyOrder != null) {
            rebuild();
        }
    }

    /** Waits for {@code b}'s average and widens a compressed one back into the bucket. */
    private void finish(GradientBucket b) {
        b.work.await();
        if (b.wire != null) {
            b.storage.flat.copy_(b.wire.flat); // back to float32, exactly
        }
        if (b.event != null) {
            b.event.commit();
            b.event = null;
        }
    }

    /**
     * Starts the average of {@code b}: as it is, or compressed: divided by the world size in
     * float32 (so 16-bit sums cannot overflow), rounded to 16 bits once, then summed.
     */
    private Work start(GradientBucket b) {
        if (announce != null && !announced) {
            announced = true;
            announce.run();
        }
        if (b.wire == null) {
            return group.allreduce(b.storage.buffer, ReduceOp.AVG);
        }
        try (PointerScope temporaries = new PointerScope()) {
            b.wire.takeShare(b.storage.flat, group.size());
        }
        return group.allreduce(b.wire.buffer, ReduceOp.SUM);
    }

    /**
     * Lays the buckets out again in the order the root saw gradients become ready in the first
     * iteration (every rank takes the root's order, so all keep the same buckets), moving the
     * averaged gradients into the new buckets. Parameters no hook saw keep their relative order at
     * the end.
     */
    private void rebuild() {
        int[] order = new int[params.size()];
        boolean[] placed = new boolean[params.size()];
        int n = 0;
        for (int id : readyOrder) {
            order[n++] = id;
            placed[id] = true;
        }
        for (int id = 0; id < params.size(); id++) {
            if (!placed[id]) {
                order[n++] = id;
            }
        }
        readyOrder = null;
        group.broadcast(DenseBuffer.of(order), DistributedBackend.ROOT_RANK).await();
        boolean same = true;
        for (int i = 0; i < order.length; i++) {
            same &= order[i] == i;
        }
        if (same) {
            return;
        }
        List<GradientBucket> old = buckets;
        buckets = layOut(order);
        try (PointerScope temporaries = new PointerScope()) {
            for (int id = 0; id < params.size(); id++) {
                Tensor view = buckets.get(bucketOf[id]).view(slotOf[id]);
                Tensor grad = params.get(id).grad();
                if (grad.defined()) { // not a parameter that no rank used
                    view.copy_(grad);
                    params.get(id).mutable_grad().put(view);
                }
            }
        }
        old.forEach(GradientBucket::free);
        LOG.log(
                System.Logger.Level.DEBUG,
                () -> "gradient buckets rebuilt in the order backward produced gradients: " + buckets.size()
                        + " buckets");
    }

    private void registerHook(int id) {
        VoidTensorHook hook = new VoidTensorHook() {
            @Override
            public void call(TensorBase grad) {
                try (PointerScope temporaries = new PointerScope()) {
                    onGradient(id, new Tensor(grad));
                }
            }
        };
        params.get(id).register_hook(LiveHooks.keep(hook));
    }

    private synchronized void onGradient(int id, Tensor grad) {
        gradientsSeen++;
        if (paused > 0) {
            return;
        }
        if (readyOrder != null && !readyOrder.contains(id)) {
            readyOrder.add(id);
        }
        GradientBucket bucket = buckets.get(bucketOf[id]);
        int slot = slotOf[id];
        if (bucket.work != null) {
            bucket.stale = true; // accumulation without a step: the step redoes it
            return;
        }
        Tensor view = bucket.view(slot);
        Tensor accumulated = params.get(id).grad();
        if (accumulated.defined()) {
            if (FlatBuffer.sameMemory(accumulated, view)) {
                return; // autograd adds into the view after this hook: the step starts the bucket
            }
            view.copy_(accumulated);
            view.add_(grad);
        } else {
            view.copy_(grad);
        }
        bucket.markReady(slot);
        while (nextToStart < buckets.size() && buckets.get(nextToStart).isFull()) {
            GradientBucket next = buckets.get(nextToStart);
            next.event = BucketEvent.begin(nextToStart++, next, true);
            long began = System.nanoTime();
            next.work = start(next);
            long waited = System.nanoTime() - began;
            waitedNanos += waited;
            waitedInHooksNanos += waited;
            startedDuringBackward++;
        }
    }
}
