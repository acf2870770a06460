package dev.cohort.shm;

import dev.cohort.api.collective.BufferAllocator;
import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.CollectiveMismatchException;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.OpKind;
import dev.cohort.api.collective.Work;
import dev.cohort.runtime.AbstractProcessGroup;
import dev.cohort.runtime.Blocks;
import dev.cohort.runtime.CallQueue;
import dev.cohort.runtime.RankNames;
import dev.cohort.runtime.SignatureWords;
import dev.cohort.shm.kernels.ReduceArgs;
import dev.cohort.shm.kernels.ReduceKernels;
import dev.cohort.shm.region.ShmAttachment;
import dev.cohort.shm.region.ShmLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A {@link dev.cohort.api.collective.ProcessGroup} over one {@link ShmAttachment} (laid out as {@link ShmLayout} says).
 *
 * <p><b>Execution.</b> Calls run one at a time in issue order through a {@link CallQueue}: mostly
 * on the thread that awaits them, so {@code allreduce(..).await()} costs no thread hand-off,
 * which would cost more than a small allreduce itself.
 *
 * <p><b>Algorithms.</b> The words: a <em>segment</em> is the part of a message that passes
 * through the slots at once (at most {@code S} bytes per rank); each slot has two
 * <em>stages</em>, and segment k of an operation uses stage {@code (ring + k) & 1}, so while the
 * ranks read segment k from one stage they may write segment k+1 into the other. One barrier per
 * segment separates writes from reads. The rule that keeps the pipeline safe: a rank writes a
 * stage only at a point that every rank reaches after it finished reading that stage's previous
 * contents (the barrier before them in program order).
 * <ul>
 * <li>small allreduce (at most {@link #FLAT_MAX_BYTES} and one segment): every rank copies its
 *   whole message into its slot; after the one barrier every rank reduces the whole message over
 *   all ranks in rank order (its own operand from its buffer) into its buffer. Each rank computes
 *   every element itself, in the same order on the same operands, so the results are bit-identical;
 *   one barrier instead of two, and no copy out. Nothing is written to the mapping but the
 *   operand: writing the result over the peer's operand too (as the large path does) made the
 *   small reduce slower, every line bouncing between the cores.
 * <li>allreduce: each segment is cut into n <em>parts</em> at fixed, 64-byte aligned boundaries;
 *   rank r copies its parts j != r into its slot; after the barrier, rank r reduces part r over
 *   all ranks in rank order (its own operand from its buffer) and writes the result to its buffer
 *   and to the mapping, from where the others copy it after the next barrier. With two ranks the
 *   result goes into the peer's slot, over the operand just read, so the lines written are ones
 *   this core already owns (the prototype measured up to 10x for writing lines the peer holds).
 *   Every element is computed once, by one rank: results are bit-identical on all ranks.
 * <li>reduce-scatter: rank r copies block j's segment into sub-slot j of its slot; after the
 *   barrier rank r reduces block r's segment into its output.
 * <li>broadcast: the root copies a segment into its slot; after the barrier the others copy it out.
 * <li>allgather(v): every rank copies its segment into its slot; after the barrier everyone copies
 *   the others' segments into place.
 * <li>allreduce in place: when the buffer lies in this rank's arena ({@link #allocator()}), its
 *   offset is published next to the tag; after the barrier rank r reduces part r of the whole
 *   buffer straight from every rank's arena buffer and writes the result into all of them; a
 *   second barrier ends it. Nothing is copied in or out and no segmenting is needed. The tag says
 *   which way a rank goes, so ranks that disagree fail with a mismatch instead of corrupting data.
 * <li>broadcast in place: likewise, after the barrier every other rank copies the root's arena
 *   buffer straight into its own, and a second barrier ends it: one copy per receiving rank, where
 *   the copying path takes the root's copy into its slot as well.
 * </ul>
 * Every operation starts by publishing a tag (sequence number and signature hash) next to its
 * barrier counter; after the first barrier each rank compares the others' tags with its own, so
 * ranks that issue different collectives fail with {@link CollectiveMismatchException}.
 */
final class ShmProcessGroup extends AbstractProcessGroup {

    /**
     * Allreduces of at most this many bytes (and at most one segment) take the one-barrier path
     * in which every rank reduces the whole message (see the class comment): a barrier and a
     * copy-out cost more than reducing the other half too (measured with two pinned ranks against
     * the two-barrier path: docs/lab/PERFORMANCE-LOG.md).
     */
    static final long FLAT_MAX_BYTES = 256 * 1024;
    /** Part boundaries are multiples of this many bytes (one cache line, one 512-bit vector). */
    private static final long ALIGN = 64;

    private final String label;
    /** The prefix of this group's messages (see {@link #who()}). */
    private final String who;

    private final ShmAttachment attachment;
    private final ShmLayout layout;
    private final SpinBarrier barrier;
    private final long segment;
    private final int n;
    private final int me;
    private final CallQueue queue;
    /** The operands of the reduction being run (under the runner lock). */
    private final ReduceArgs reduce;
    /** Scratch for the signature words of the call being started (under the runner lock). */
    private final long[] words = new long[SignatureWords.WORDS];
    /** Tags of in-place allreduces differ from the copying ones' by this. */
    static final long IN_PLACE = 0x5BD1E9955BD1E995L;
    /** This rank's arena, or null when --shm-arena-mib is 0. */
    private final ShmArena arena;

    private long bytesCopied;
    private long ring;
    /** The call running now and the tag this rank published for it (under the queue's runner lock). */
    private CallQueue.Call running;

    private long tag;
    /** What the barrier says it was doing when it reports or fails: the running call. */
    private final SpinBarrier.Context context = new SpinBarrier.Context() {
        @Override
        public String describe() {
            return running.describe();
        }

        @Override
        public boolean closed() {
            return running.closing();
        }

        @Override
        public long sequence() {
            return running.collective().sequence();
        }

        @Override
        public Collective collective() {
            return running.collective();
        }

        @Override
        public long tag() {
            return tag;
        }
    };
    /**
     * The segments of the last buffers called with: DDP's buckets and a benchmark's buffers come
     * back every call, and wrapping a buffer allocates a view and a segment (under the runner lock).
     */
    private final DenseBuffer[] wrapped = new DenseBuffer[4];

    private final MemorySegment[] segments = new MemorySegment[4];
    private int nextWrapped;

    ShmProcessGroup(
            String label,
            ShmAttachment attachment,
            Duration timeout,
            Duration stallTime,
            RankNames names,
            CallQueue.Options queueOptions) {
        super(attachment.rank(), attachment.layout().size(), timeout);
        this.label = label;
        this.who = label + " " + super.who();
        this.attachment = attachment;
        this.layout = attachment.layout();
        this.barrier = new SpinBarrier(layout, attachment.rank(), stallTime, names);
        this.segment = layout.segmentBytes();
        this.n = layout.size();
        this.me = attachment.rank();
        this.reduce = new ReduceArgs(n).ranks(n, me);
        this.arena = layout.arenaBytes() > 0 ? new ShmArena(attachment) : null;
        compileKernelsOnce(attachment);
        this.queue = new CallQueue(
                "cohort-shm-" + label.replace(' ', '-') + "-rank-" + me,
                c -> "waiting for rank(s) " + names.ranks(barrier.missing()),
                e -> attachment.abort(),
                queueOptions);
    }

    private static final AtomicBoolean KERNELS_COMPILED = new AtomicBoolean();
    /** How long a JVM's first group may spend getting its kernels compiled (see {@link ReduceKernels#compileFloatKernels}). */
    static final long COMPILE_BUDGET_NS = 2_000_000_000L;

    /** Before the first group's first call: the reduction kernels, compiled (this rank's slot is scratch until then). */
    private static void compileKernelsOnce(ShmAttachment attachment) {
        ShmLayout layout = attachment.layout();
        if (KERNELS_COMPILED.compareAndSet(false, true)) {
            ReduceKernels.compileFloatKernels(
                    layout.memory(), layout.slot(attachment.rank(), 0), layout.size(), COMPILE_BUDGET_NS);
        }
    }

    /**
     * "shm world rank 0 of 2": built once, here, because every call's {@link CallQueue.Call} holds
     * it for its messages (which are built only when they are needed).
     */
    @Override
    protected String who() {
        return who;
    }

    /** This rank's arena: allreduces of buffers allocated there copy nothing. */
    @Override
    public Optional<BufferAllocator> allocator() {
        return Optional.ofNullable(arena);
    }

    /** Bytes this rank's collectives copied between callers' buffers and the mapping (diagnostics, tests). */
    long bytesCopied() {
        return queue.whileIdle(() -> bytesCopied);
    }

    /** Barriers this rank's collectives have passed (diagnostics, tests: how many steps an algorithm takes). */
    long barriersPassed() {
        return queue.whileIdle(barrier::phase);
    }

    // ----- execution ---------------------------------------------------------------------------

    @Override
    protected Work start(Collective call, Duration timeout) {
        return queue.submit(who(), call, timeout, this::execute);
    }

    @Override
    protected void release() {
        queue.close(() -> {
            if (me == 0) {
                attachment.deleteIfOurs();
            }
            if (arena != null) {
                arena.close();
            }
            attachment.close();
            Arrays.fill(wrapped, null);
            Arrays.fill(segments, null);
        });
    }

    // ----- the algorithms ----------------------------------------------------------------------

    private void execute(CallQueue.Call t) {
        running = t;
        Collective c = t.collective();
        MemorySegment user = c.kind() == OpKind.ALLREDUCE || c.kind() == OpKind.BROADCAST ? segmentOf(c.input()) : null;
        long inArena = user != null && arena != null ? arena.offsetOf(user) : -1;
        tag = inArena >= 0 ? tag(c) ^ IN_PLACE : tag(c);
        if (inArena >= 0) {
            layout.memory().set(ValueLayout.JAVA_LONG, layout.bufferAtOffset(me, c.sequence()), inArena);
        }
        layout.memory().set(ValueLayout.JAVA_LONG, layout.tagOffset(me, c.sequence()), tag);
        switch (c.kind()) {
            case ALLREDUCE -> {
                if (inArena >= 0) {
                    allreduceInPlace(t, inArena);
                } else {
                    allreduce(t, user);
                }
            }
            case REDUCE_SCATTER -> reduceScatter(t);
            case BROADCAST -> {
                if (inArena >= 0) {
                    broadcastInPlace(t, inArena);
                } else {
                    broadcast(t);
                }
            }
            case ALLGATHER -> allgather(t, null);
            case ALLGATHERV -> allgather(t, c.counts());
            case BARRIER -> sync(t, true);
            case REDUCE -> reduceToRoot(t);
            case GATHER, GATHERV -> gather(t);
            case SCATTER, SCATTERV -> scatter(t);
            case ALLTOALL -> alltoall(t);
            case ALLTOALLV -> alltoallv(t);
        }
    }

    /**
     * The operation's tag: its sequence number and signature ({@link SignatureWords}: kind, type,
     * length, op, root, allgatherv's counts) mixed into 64 bits. No strings: this runs on every
     * call, and building {@link Collective#signature()} cost more than a small allreduce.
     */
    private long tag(Collective c) {
        SignatureWords.encode(c, words, 0);
        long h = 0x243F6A8885A308D3L;
        for (long w : words) {
            h = Long.rotateLeft((h ^ w) * 0x9E3779B97F4A7C15L, 31);
        }
        return h ^ h >>> 29;
    }

    /** One barrier; the first of each operation also compares the ranks' tags. */
    private void sync(CallQueue.Call t, boolean first) {
        barrier.await(t.deadline(), t.timeoutNanos(), context);
        if (first) {
            for (int j = 0; j < n; j++) {
                long theirs = layout.memory()
                        .get(
                                ValueLayout.JAVA_LONG,
                                layout.tagOffset(j, t.collective().sequence()));
                if (theirs == (tag ^ IN_PLACE)) {
                    boolean mineInArena = tag != tag(t.collective());
                    throw new CollectiveMismatchException(
                            t.describe() + ": rank " + j + "'s buffer is "
                                    + (mineInArena ? "not " : "") + "in its shm arena and this rank's is"
                                    + (mineInArena ? "" : " not") + "; allocate the buffers of a collective from "
                                    + "group.allocator() on every rank or on none",
                            null,
                            me,
                            t.collective(),
                            List.of(j));
                }
                if (theirs != tag) {
                    throw new CollectiveMismatchException(
                            t.describe() + ": rank " + j
                                    + " issued a different collective (kind, type, length, op or root) as its #"
                                    + t.collective().sequence(),
                            null,
                            me,
                            t.collective(),
                            List.of(j));
                }
            }
            // After the tags: a peer that found a mismatch gives up at once, and the mismatch is the news.
            barrier.checkNoneAbandoned(context);
        }
    }

    /** Every copy between a caller's buffer and the mapping goes through here, to be counted. */
    private void copy(MemorySegment from, long fromOffset, MemorySegment to, long toOffset, long bytes) {
        MemorySegment.copy(from, fromOffset, to, toOffset, bytes);
        bytesCopied += bytes;
    }

    private int stage(long k) {
        return (int) ((ring + k) & 1);
    }

    private MemorySegment segmentOf(DenseBuffer b) {
        for (int i = 0; i < wrapped.length; i++) {
            if (wrapped[i] == b) {
                return segments[i];
            }
        }
        MemorySegment s = MemorySegment.ofBuffer(b.view());
        wrapped[nextWrapped] = b;
        segments[nextWrapped] = s;
        nextWrapped = (nextWrapped + 1) % wrapped.length;
        return s;
    }

    /** Start (in elements) of part j of a segment of {@code full} elements, clipped to {@code len}. */
    private long partLo(long full, long len, int j, int e) {
        if (j >= n) {
            return len;
        }
        long perLine = ALIGN / e;
        return Math.min(len, full * j / n / perLine * perLine);
    }

    private void allreduce(CallQueue.Call t, MemorySegment user) {
        DenseBuffer data = t.collective().input();
        long count = data.count();
        if (count == 0 || n == 1) {
            sync(t, true);
            return;
        }
        int e = data.dataType().byteSize();
        MemorySegment shm = layout.memory();
        long bytes = count * e;
        if (bytes <= FLAT_MAX_BYTES && bytes <= segment) {
            allreduceFlat(t, user, count, bytes);
            return;
        }
        long full = segment / e;
        long nseg = (count + full - 1) / full;
        for (long k = 0; k < nseg; k++) {
            long s0 = k * full;
            long len = Math.min(full, count - s0);
            int q = stage(k);
            long mine = layout.slot(me, q);
            for (int j = 0; j < n; j++) {
                if (j != me) {
                    long lo = partLo(full, len, j, e);
                    long hi = partLo(full, len, j + 1, e);
                    copy(user, (s0 + lo) * e, shm, mine + lo * e, (hi - lo) * e);
                }
            }
            sync(t, k == 0);
            if (k > 0) {
                copyResults(user, k - 1, full, count, e);
            }
            long lo = partLo(full, len, me, e);
            long hi = partLo(full, len, me + 1, e);
            for (int j = 0; j < n; j++) {
                reduce.term(j, layout.slot(j, q) + lo * e);
            }
            ReduceKernels.reduce(reduce.op(data.dataType(), t.collective().op())
                    .shm(shm)
                    .own(user, (s0 + lo) * e)
                    .count(hi - lo)
                    .out(user, (s0 + lo) * e)
                    .noResults()
                    .addResult(resultSlot(me, q) + lo * e));
        }
        sync(t, false);
        copyResults(user, nseg - 1, full, count, e);
        ring += nseg;
    }

    /** A small allreduce with one barrier (see the class comment). */
    private void allreduceFlat(CallQueue.Call t, MemorySegment user, long count, long bytes) {
        MemorySegment shm = layout.memory();
        int q = stage(0);
        copy(user, 0, shm, layout.slot(me, q), bytes);
        sync(t, true);
        for (int j = 0; j < n; j++) {
            reduce.term(j, layout.slot(j, q));
        }
        ReduceKernels.reduce(
                reduce.op(t.collective().input().dataType(), t.collective().op())
                        .shm(shm)
                        .own(user, 0)
                        .count(count)
                        .out(user, 0)
                        .noResults());
        ring += 1;
    }

    /** The allreduce of a buffer at offset {@code mine} of this rank's arena (see the class comment). */
    private void allreduceInPlace(CallQueue.Call t, long mine) {
        DenseBuffer data = t.collective().input();
        long count = data.count();
        sync(t, true);
        if (count == 0 || n == 1) {
            return;
        }
        int e = data.dataType().byteSize();
        MemorySegment shared = arena.memory();
        long lo = partLo(count, count, me, e);
        long hi = partLo(count, count, me + 1, e);
        reduce.noResults();
        long own = -1;
        for (int j = 0; j < n; j++) {
            long at = j == me
                    ? mine
                    : layout.memory()
                            .get(
                                    ValueLayout.JAVA_LONG,
                                    layout.bufferAtOffset(j, t.collective().sequence()));
            long term = arena.areaOffset(j) + at + lo * e;
            reduce.term(j, term);
            if (j == me) {
                own = term;
            } else {
                reduce.addResult(term); // every peer's buffer, the first one first
            }
        }
        ReduceKernels.reduce(reduce.op(data.dataType(), t.collective().op())
                .shm(shared)
                .own(shared, own)
                .count(hi - lo)
                .out(shared, own));
        sync(t, false);
    }

    /** The broadcast of a buffer at offset {@code mine} of this rank's arena (see the class comment). */
    private void broadcastInPlace(CallQueue.Call t, long mine) {
        DenseBuffer data = t.collective().input();
        int root = t.collective().root();
        sync(t, true);
        if (data.count() == 0 || n == 1) {
            return;
        }
        if (me != root) {
            long at = layout.memory()
                    .get(
                            ValueLayout.JAVA_LONG,
                            layout.bufferAtOffset(root, t.collective().sequence()));
            MemorySegment shared = arena.memory();
            copy(shared, arena.areaOffset(root) + at, shared, arena.areaOffset(me) + mine, data.byteSize());
        }
        sync(t, false);
    }

    /** Where the rank that reduces part {@code owner} leaves its result (see the class comment). */
    private long resultSlot(int owner, int q) {
        return layout.slot(n == 2 ? 1 - owner : owner, q);
    }

    private void copyResults(MemorySegment user, long k, long full, long count, int e) {
        long s0 = k * full;
        long len = Math.min(full, count - s0);
        int q = stage(k);
        for (int j = 0; j < n; j++) {
            if (j != me) {
                long lo = partLo(full, len, j, e);
                long hi = partLo(full, len, j + 1, e);
                copy(layout.memory(), resultSlot(j, q) + lo * e, user, (s0 + lo) * e, (hi - lo) * e);
            }
        }
    }

    private void reduceScatter(CallQueue.Call t) {
        DenseBuffer input = t.collective().input();
        DenseBuffer output = t.collective().output();
        long block = output.count();
        if (block == 0) {
            sync(t, true);
            return;
        }
        int e = input.dataType().byteSize();
        MemorySegment in = segmentOf(input);
        MemorySegment out = segmentOf(output);
        MemorySegment shm = layout.memory();
        long per = Math.max(ALIGN / e, segment / n / ALIGN * ALIGN / e); // elements of one block per segment
        long nseg = (block + per - 1) / per;
        for (long k = 0; k < nseg; k++) {
            long s0 = k * per;
            long len = Math.min(per, block - s0);
            int q = stage(k);
            for (int j = 0; j < n; j++) {
                if (j != me) {
                    copy(in, (j * block + s0) * e, shm, layout.slot(me, q) + j * per * e, len * e);
                }
            }
            sync(t, k == 0);
            for (int j = 0; j < n; j++) {
                reduce.term(j, layout.slot(j, q) + me * per * e);
            }
            ReduceKernels.reduce(reduce.op(input.dataType(), t.collective().op())
                    .shm(shm)
                    .own(in, (me * block + s0) * e)
                    .count(len)
                    .out(out, s0 * e)
                    .noResults());
        }
        ring += nseg;
    }

    private void broadcast(CallQueue.Call t) {
        DenseBuffer data = t.collective().input();
        long count = data.count();
        int root = t.collective().root();
        if (count == 0 || n == 1) {
            sync(t, true);
            return;
        }
        int e = data.dataType().byteSize();
        MemorySegment user = segmentOf(data);
        long full = segment / e;
        long nseg = (count + full - 1) / full;
        for (long k = 0; k < nseg; k++) {
            long s0 = k * full;
            long len = Math.min(full, count - s0);
            long at = layout.slot(root, stage(k));
            if (me == root) {
                copy(user, s0 * e, layout.memory(), at, len * e);
            }
            sync(t, k == 0);
            if (me != root) {
                copy(layout.memory(), at, user, s0 * e, len * e);
            }
        }
        ring += nseg;
    }

    private void allgather(CallQueue.Call t, int[] countsOrNull) {
        DenseBuffer input = t.collective().input();
        DenseBuffer output = t.collective().output();
        int e = input.dataType().byteSize();
        long[] counts = new long[n];
        long[] offsets = new long[n];
        long total = 0;
        long most = 0;
        for (int j = 0; j < n; j++) {
            counts[j] = countsOrNull == null ? input.count() : countsOrNull[j];
            offsets[j] = total;
            total += counts[j];
            most = Math.max(most, counts[j]);
        }
        MemorySegment in = segmentOf(input);
        MemorySegment out = segmentOf(output);
        copy(in, 0, out, offsets[me] * e, counts[me] * e);
        long full = segment / e;
        long nseg = n == 1 ? 0 : (most + full - 1) / full;
        if (nseg == 0) {
            sync(t, true);
            return;
        }
        for (long k = 0; k < nseg; k++) {
            long s0 = k * full;
            int q = stage(k);
            long mineLen = Math.max(0, Math.min(full, counts[me] - s0));
            if (mineLen > 0) {
                copy(in, s0 * e, layout.memory(), layout.slot(me, q), mineLen * e);
            }
            sync(t, k == 0);
            for (int j = 0; j < n; j++) {
                long len = Math.max(0, Math.min(full, counts[j] - s0));
                if (j != me && len > 0) {
                    copy(layout.memory(), layout.slot(j, q), out, (offsets[j] + s0) * e, len * e);
                }
            }
        }
        ring += nseg;
    }

    /** Reduce: every rank but the root copies a segment into its slot; after the barrier the root reduces them in rank order. */
    private void reduceToRoot(CallQueue.Call t) {
        DenseBuffer data = t.collective().input();
        long count = data.count();
        if (count == 0 || n == 1) {
            sync(t, true);
            return;
        }
        int root = t.collective().root();
        int e = data.dataType().byteSize();
        MemorySegment user = segmentOf(data);
        MemorySegment shm = layout.memory();
        long full = segment / e;
        long nseg = (count + full - 1) / full;
        for (long k = 0; k < nseg; k++) {
            long s0 = k * full;
            long len = Math.min(full, count - s0);
            int q = stage(k);
            if (me != root) {
                copy(user, s0 * e, shm, layout.slot(me, q), len * e);
            }
            sync(t, k == 0);
            if (me == root) {
                for (int j = 0; j < n; j++) {
                    reduce.term(j, layout.slot(j, q));
                }
                ReduceKernels.reduce(reduce.op(data.dataType(), t.collective().op())
                        .shm(shm)
                        .own(user, s0 * e)
                        .count(len)
                        .out(user, s0 * e)
                        .noResults());
            }
        }
        ring += nseg;
    }

    private void gather(CallQueue.Call t) {
        Collective c = t.collective();
        long[] offsets = Blocks.offsets(c.counts(), c.input().count(), n);
        long[] none = new long[n];
        long[] sendCounts = new long[n];
        long[] receiveCounts = new long[n];
        if (me == c.root()) {
            for (int i = 0; i < n; i++) {
                receiveCounts[i] = offsets[i + 1] - offsets[i];
            }
        } else {
            sendCounts[c.root()] = c.input().count();
        }
        sendCounts[me] = me == c.root() ? c.input().count() : 0; // the root's own block: copied directly
        exchange(
                t,
                c.input(),
                none,
                sendCounts,
                c.output(),
                offsets,
                receiveCounts,
                Blocks.longest(offsets),
                false,
                false);
    }

    private void scatter(CallQueue.Call t) {
        Collective c = t.collective();
        long[] offsets = Blocks.offsets(c.counts(), c.output().count(), n);
        long[] none = new long[n];
        long[] sendCounts = new long[n];
        long[] receiveCounts = new long[n];
        if (me == c.root()) {
            for (int j = 0; j < n; j++) {
                sendCounts[j] = offsets[j + 1] - offsets[j];
            }
            receiveCounts[me] = sendCounts[me];
            exchange(
                    t,
                    c.input(),
                    offsets,
                    sendCounts,
                    c.output(),
                    none,
                    receiveCounts,
                    Blocks.longest(offsets),
                    true,
                    false);
        } else {
            receiveCounts[c.root()] = c.output().count();
            exchange(t, null, none, sendCounts, c.output(), none, receiveCounts, Blocks.longest(offsets), true, false);
        }
    }

    private void alltoall(CallQueue.Call t) {
        Collective c = t.collective();
        long block = c.input().count() / n;
        long[] offsets = Blocks.offsets(null, (int) block, n);
        long[] counts = new long[n];
        Arrays.fill(counts, block);
        exchange(t, c.input(), offsets, counts, c.output(), offsets, counts, block, true, false);
    }

    /** First every rank's send and receive counts through the slots, so every rank checks every pair; then the blocks. */
    private void alltoallv(CallQueue.Call t) {
        Collective c = t.collective();
        int[] packed = dev.cohort.runtime.AlltoallCounts.packed(c.counts(), c.receiveCounts());
        MemorySegment shm = layout.memory();
        int q = stage(0);
        MemorySegment.copy(packed, 0, shm, ValueLayout.JAVA_INT, layout.slot(me, q), packed.length);
        sync(t, true);
        int[] all = new int[packed.length * n];
        for (int j = 0; j < n; j++) {
            MemorySegment.copy(shm, ValueLayout.JAVA_INT, layout.slot(j, q), all, j * packed.length, packed.length);
        }
        ring += 1;
        String disagreement = dev.cohort.runtime.AlltoallCounts.disagreement(t.describe(), all, n);
        if (disagreement != null) {
            throw new CollectiveMismatchException(disagreement, null, me, c, List.of());
        }
        long longest = 0;
        for (int x : all) {
            longest = Math.max(longest, x);
        }
        long[] sendOffsets = new long[n];
        long[] sendCounts = new long[n];
        long[] receiveOffsets = new long[n];
        long[] receiveCounts = new long[n];
        for (int j = 0; j < n; j++) {
            sendCounts[j] = c.counts()[j];
            receiveCounts[j] = c.receiveCounts()[j];
            if (j + 1 < n) {
                sendOffsets[j + 1] = sendOffsets[j] + sendCounts[j];
                receiveOffsets[j + 1] = receiveOffsets[j] + receiveCounts[j];
            }
        }
        exchange(t, c.input(), sendOffsets, sendCounts, c.output(), receiveOffsets, receiveCounts, longest, true, true);
    }

    /**
     * Gather, scatter and all-to-all(v): this rank sends {@code sendCounts[j]} elements of
     * {@code input} from {@code sendOffsets[j]} to rank j, and receives {@code receiveCounts[i]}
     * from rank i into {@code output} at {@code receiveOffsets[i]} (its own block it copies
     * directly). Segment k carries elements {@code [k P, (k+1) P)} of every pair's block: rank i
     * copies its block for j into sub-slot j of its slot ({@code perDestination}; else, with one
     * destination, the whole slot), and after the barrier j copies sub-slot j of every i's slot
     * out. {@code longest}, the most elements any pair moves, sets the segments, alike on every rank.
     */
    private void exchange(
            CallQueue.Call t,
            DenseBuffer input,
            long[] sendOffsets,
            long[] sendCounts,
            DenseBuffer output,
            long[] receiveOffsets,
            long[] receiveCounts,
            long longest,
            boolean perDestination,
            boolean tagsChecked) {
        int e = t.collective().dataType().byteSize();
        MemorySegment in = input == null ? null : segmentOf(input);
        MemorySegment out = output == null ? null : segmentOf(output);
        if (in != null && out != null && sendCounts[me] > 0) {
            copy(in, sendOffsets[me] * e, out, receiveOffsets[me] * e, sendCounts[me] * e);
        }
        long per = perDestination ? Math.max(ALIGN / e, segment / n / ALIGN * ALIGN / e) : segment / e;
        long nseg = n == 1 ? 0 : (longest + per - 1) / per;
        if (nseg == 0) {
            if (!tagsChecked) {
                sync(t, true);
            }
            return;
        }
        MemorySegment shm = layout.memory();
        for (long k = 0; k < nseg; k++) {
            long s0 = k * per;
            int q = stage(k);
            for (int j = 0; j < n; j++) {
                long len = Math.max(0, Math.min(per, sendCounts[j] - s0));
                if (j != me && len > 0) {
                    copy(
                            in,
                            (sendOffsets[j] + s0) * e,
                            shm,
                            layout.slot(me, q) + (perDestination ? j * per * e : 0),
                            len * e);
                }
            }
            sync(t, k == 0 && !tagsChecked);
            for (int i = 0; i < n; i++) {
                long len = Math.max(0, Math.min(per, receiveCounts[i] - s0));
                if (i != me && len > 0) {
                    copy(
                            shm,
                            layout.slot(i, q) + (perDestination ? me * per * e : 0),
                            out,
                            (receiveOffsets[i] + s0) * e,
                            len * e);
                }
            }
        }
        ring += nseg;
    }
}
