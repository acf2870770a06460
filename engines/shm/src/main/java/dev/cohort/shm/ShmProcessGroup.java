package dev.cohort.shm;

import dev.cohort.api.collective.BufferAllocator;
import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.CollectiveMismatchException;
import dev.cohort.api.collective.OpKind;
import dev.cohort.api.collective.Work;
import dev.cohort.runtime.AbstractProcessGroup;
import dev.cohort.runtime.CallQueue;
import dev.cohort.runtime.RankNames;
import dev.cohort.shm.kernels.ReduceKernels;
import dev.cohort.shm.region.ShmAttachment;
import dev.cohort.shm.region.ShmLayout;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
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
    /** Tags of in-place allreduces differ from the copying ones' by this. */
    static final long IN_PLACE = 0x5BD1E9955BD1E995L;

    private final String label;
    /** The prefix of this group's messages (see {@link #who()}). */
    private final String who;

    private final ShmAttachment attachment;
    private final int me;
    private final CallQueue queue;
    /** This rank's arena, or null when --shm-arena-mib is 0. */
    private final ShmArena arena;
    /** The steps every algorithm takes, and the algorithms (used by the running call only). */
    private final ShmSteps steps;

    private final ShmReductions reductions;
    private final ShmMoves moves;

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
        this.me = attachment.rank();
        this.steps = new ShmSteps(attachment.layout(), me, stallTime, names);
        steps.reportsAlso(this::whereTheRanksStand);
        this.arena = attachment.layout().arenaBytes() > 0 ? new ShmArena(attachment) : null;
        this.reductions = new ShmReductions(steps, arena);
        this.moves = new ShmMoves(steps, arena);
        compileKernelsOnce(attachment);
        this.queue = new CallQueue(
                "cohort-shm-" + label.replace(' ', '-') + "-rank-" + me,
                c -> "waiting for rank(s) " + names.ranks(steps.barrier.missing()),
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
        return queue.whileIdle(steps::bytesCopied);
    }

    /** Barriers this rank's collectives have passed (diagnostics, tests: how many steps an algorithm takes). */
    long barriersPassed() {
        return queue.whileIdle(steps.barrier::phase);
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
            steps.clear();
        });
    }

    // ----- the algorithms ----------------------------------------------------------------------

    private void execute(CallQueue.Call t) {
        Collective c = t.collective();
        MemorySegment user =
                c.kind() == OpKind.ALLREDUCE || c.kind() == OpKind.BROADCAST ? steps.segmentOf(c.input()) : null;
        long inArena = user != null && arena != null ? arena.offsetOf(user) : -1;
        steps.begin(t, inArena);
        switch (c.kind()) {
            case ALLREDUCE -> {
                if (inArena >= 0) {
                    reductions.allreduceInPlace(t, inArena);
                } else {
                    reductions.allreduce(t, user);
                }
            }
            case REDUCE_SCATTER -> reductions.reduceScatter(t);
            case BROADCAST -> {
                if (inArena >= 0) {
                    moves.broadcastInPlace(t, inArena);
                } else {
                    moves.broadcast(t);
                }
            }
            case ALLGATHER -> moves.allgather(t, null);
            case ALLGATHERV -> moves.allgather(t, c.counts());
            case BARRIER -> steps.sync(t, true);
            case REDUCE -> reductions.reduceToRoot(t);
            case GATHER, GATHERV -> moves.gather(t);
            case SCATTER, SCATTERV -> moves.scatter(t);
            case ALLTOALL -> moves.alltoall(t);
            case ALLTOALLV -> moves.alltoallv(t);
        }
    }
}
