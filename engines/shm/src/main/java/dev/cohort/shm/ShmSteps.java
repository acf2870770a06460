package dev.cohort.shm;

import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.CollectiveMismatchException;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.runtime.CallQueue;
import dev.cohort.runtime.RankNames;
import dev.cohort.runtime.SignatureWords;
import dev.cohort.shm.kernels.ReduceArgs;
import dev.cohort.shm.region.ShmLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;

/**
 * What every shm algorithm of one rank steps through (see {@link ShmProcessGroup} for the words):
 * the mapping and its barrier, the ring of stages, the tag each call publishes and the check of
 * the others' tags at its first barrier, the counted copies, and the caller's buffers wrapped as
 * memory segments. Used only by the call running now (under the call queue's runner lock).
 */
final class ShmSteps {

    /** Part boundaries are multiples of this many bytes (one cache line, one 512-bit vector). */
    static final long ALIGN = 64;

    final ShmLayout layout;
    final SpinBarrier barrier;
    /** Bytes of one segment (per rank). */
    final long segment;

    final int n;
    final int me;
    /** The operands of the reduction being run. */
    final ReduceArgs reduce;
    /** Scratch for the signature words of the call being started. */
    private final long[] words = new long[SignatureWords.WORDS];

    private long bytesCopied;
    private long ring;
    /** The call running now and the tag this rank published for it. */
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

        @Override
        public String whereTheRanksStand() {
            return whereTheRanksStand.get();
        }
    };
    /** The group's flight records' view of the ranks, for stall reports. */
    private java.util.function.Supplier<String> whereTheRanksStand = () -> "";
    /**
     * The segments of the last buffers called with: DDP's buckets and a benchmark's buffers come
     * back every call, and wrapping a buffer allocates a view and a segment.
     */
    private final DenseBuffer[] wrapped = new DenseBuffer[4];

    private final MemorySegment[] segments = new MemorySegment[4];
    private int nextWrapped;

    /** Stall reports end with {@code whereTheRanksStand}'s account (the group's flight records). */
    void reportsAlso(java.util.function.Supplier<String> whereTheRanksStand) {
        this.whereTheRanksStand = whereTheRanksStand;
    }

    ShmSteps(ShmLayout layout, int me, Duration stallTime, RankNames names) {
        this.layout = layout;
        this.me = me;
        this.n = layout.size();
        this.segment = layout.segmentBytes();
        this.barrier = new SpinBarrier(layout, me, stallTime, names);
        this.reduce = new ReduceArgs(n).ranks(n, me);
    }

    /**
     * Starts call {@code t}: publishes its tag (marked {@link ShmProcessGroup#IN_PLACE} when its
     * buffer lies at offset {@code inArena} of this rank's arena, which is published too; -1: not).
     */
    void begin(CallQueue.Call t, long inArena) {
        running = t;
        Collective c = t.collective();
        tag = inArena >= 0 ? tag(c) ^ ShmProcessGroup.IN_PLACE : tag(c);
        if (inArena >= 0) {
            layout.memory().set(ValueLayout.JAVA_LONG, layout.bufferAtOffset(me, c.sequence()), inArena);
        }
        layout.memory().set(ValueLayout.JAVA_LONG, layout.tagOffset(me, c.sequence()), tag);
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
    void sync(CallQueue.Call t, boolean first) {
        barrier.await(t.deadline(), t.timeoutNanos(), context);
        if (first) {
            for (int j = 0; j < n; j++) {
                long theirs = layout.memory()
                        .get(
                                ValueLayout.JAVA_LONG,
                                layout.tagOffset(j, t.collective().sequence()));
                if (theirs == (tag ^ ShmProcessGroup.IN_PLACE)) {
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
    void copy(MemorySegment from, long fromOffset, MemorySegment to, long toOffset, long bytes) {
        MemorySegment.copy(from, fromOffset, to, toOffset, bytes);
        bytesCopied += bytes;
    }

    long bytesCopied() {
        return bytesCopied;
    }

    /** The stage segment {@code k} of the running operation uses. */
    int stage(long k) {
        return (int) ((ring + k) & 1);
    }

    /** The running operation used {@code segments} segments: the next one starts on the stage after. */
    void advance(long segments) {
        ring += segments;
    }

    MemorySegment segmentOf(DenseBuffer b) {
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

    /** Elements of one block per segment when every rank's slot holds one sub-slot per rank. */
    long perDestination(int e) {
        return Math.max(ALIGN / e, segment / n / ALIGN * ALIGN / e);
    }

    /** Forgets the wrapped buffers (the group closes). */
    void clear() {
        Arrays.fill(wrapped, null);
        Arrays.fill(segments, null);
    }
}
