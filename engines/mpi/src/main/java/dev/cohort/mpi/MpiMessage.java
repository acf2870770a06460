package dev.cohort.mpi;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.CollectiveException;
import dev.cohort.api.collective.CollectiveTimeoutException;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.OpKind;
import dev.cohort.runtime.DeadlineWork;
import dev.cohort.runtime.WaitPolicy;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;

/**
 * A send or recv through MPI's nonblocking point-to-point calls, on two communicators of the
 * group's own: first the message's length (one int64 on {@code lengths}), then its elements (on
 * {@code payloads}), with the caller's tag. MPI keeps messages of one sender, tag and communicator
 * in order, so each length meets its elements. A receive learns the length first: one that
 * differs from its buffer's fails, naming both (its elements are received and dropped). MPI moves
 * messages only while it is called: waiting polls the requests (and so does {@link #isDone()}).
 * Heap buffers go through native memory of the message's own, which the garbage collector frees
 * once the message settled; until then the group keeps the message (after a timeout, for good:
 * MPI cannot cancel a request here and may still write into it).
 */
final class MpiMessage extends DeadlineWork {

    private final OpenMpi mpi;
    private final String who;
    private final MemorySegment lengths;
    private final MemorySegment payloads;
    /** Freed by the garbage collector: closing a shared arena per message cost more than a small message. */
    private final Arena arena = Arena.ofAuto();

    private final java.util.Set<MpiMessage> inFlight;
    private final MemorySegment requests;
    private final MemorySegment flag;
    private final MemorySegment length;
    private final DenseBuffer data;
    /** Where the elements are sent from or received into: the caller's memory, or native staging. */
    private MemorySegment elements;
    /** SEND: both sent; RECV: 0 length posted, 1 elements posted; -1 settled. */
    private int stage;

    private boolean done;
    /** How awaiting polls MPI (the group's). */
    private final WaitPolicy waits;

    /**
     * @param inFlight the group's messages MPI may still use: this one stays there (and so does its
     *                 memory) until it settles, or for good after a timeout
     * @param waits    how awaiting it polls MPI
     */
    MpiMessage(
            OpenMpi mpi,
            String who,
            MemorySegment lengths,
            MemorySegment payloads,
            Collective call,
            Duration timeout,
            java.util.Set<MpiMessage> inFlight,
            WaitPolicy waits) {
        super(call, timeout);
        this.waits = waits;
        this.inFlight = inFlight;
        inFlight.add(this);
        this.mpi = mpi;
        this.who = who;
        this.lengths = lengths;
        this.payloads = payloads;
        this.data = call.input();
        this.requests = arena.allocate(ADDRESS, 2);
        this.flag = arena.allocate(JAVA_INT);
        this.length = arena.allocate(JAVA_LONG);
        int peer = call.root();
        int tag = call.tag();
        synchronized (this) {
            if (call.kind() == OpKind.SEND) {
                elements = staged(true);
                length.set(JAVA_LONG, 0, data.byteSize());
                mpi.check(
                        mpi.isendWords(length, 1, peer, tag, lengths, requests.asSlice(0, ADDRESS.byteSize())),
                        "MPI_Isend");
                mpi.check(
                        mpi.isend(
                                elements,
                                data.count(),
                                data.dataType(),
                                peer,
                                tag,
                                payloads,
                                requests.asSlice(ADDRESS.byteSize(), ADDRESS.byteSize())),
                        "MPI_Isend");
            } else {
                mpi.check(
                        mpi.irecvWords(length, 1, peer, tag, lengths, requests.asSlice(0, ADDRESS.byteSize())),
                        "MPI_Irecv");
            }
        }
    }

    /** The caller's memory (direct buffers) or a native copy ({@code copyIn}: of its contents). */
    private MemorySegment staged(boolean copyIn) {
        if (data.isDirect()) {
            return MemorySegment.ofBuffer(data.view());
        }
        MemorySegment copy = arena.allocate(Math.max(1, data.byteSize()), 64);
        if (copyIn) {
            MemorySegment.copy(MemorySegment.ofBuffer(data.view()), 0, copy, 0, data.byteSize());
        }
        return copy;
    }

    /** Drives MPI once; true when the message settled. */
    private synchronized boolean progress() {
        if (done) {
            return true;
        }
        Collective call = collective();
        try {
            if (call.kind() == OpKind.SEND) {
                if (mpi.testAll(2, requests, flag)) {
                    settle(null);
                }
                return done;
            }
            if (stage == 0 && mpi.testAll(1, requests, flag)) {
                long bytes = length.get(JAVA_LONG, 0);
                stage = 1;
                int count = data.count();
                if (bytes != data.byteSize()) {
                    // take the elements off the wire, then refuse
                    elements = arena.allocate(Math.max(1, bytes), 64);
                    count = Math.toIntExact(bytes / data.dataType().byteSize());
                    mismatch = new CollectiveException(
                            who + ": " + call.describe() + ": rank " + call.root() + " sent "
                                    + bytes + " bytes with tag " + call.tag() + " but this receive's buffer holds "
                                    + data.byteSize()
                                    + " (" + data.describe() + ")",
                            null,
                            -1,
                            call,
                            List.of(call.root()));
                } else {
                    elements = staged(false);
                }
                mpi.check(
                        mpi.irecv(
                                elements,
                                count,
                                data.dataType(),
                                call.root(),
                                call.tag(),
                                payloads,
                                requests.asSlice(ADDRESS.byteSize(), ADDRESS.byteSize())),
                        "MPI_Irecv");
            }
            if (stage == 1 && mpi.testAll(1, requests.asSlice(ADDRESS.byteSize(), ADDRESS.byteSize()), flag)) {
                if (mismatch == null && !data.isDirect()) {
                    MemorySegment.copy(elements, 0, MemorySegment.ofBuffer(data.view()), 0, data.byteSize());
                }
                settle(mismatch);
            }
        } catch (RuntimeException e) {
            settle(
                    e instanceof CollectiveException c
                            ? c
                            : new CollectiveException(who + ": " + call.describe() + " failed: " + e.getMessage(), e));
        }
        return done;
    }

    private CollectiveException mismatch;

    private void settle(CollectiveException failure) {
        done = true;
        inFlight.remove(this);
        if (failure != null) {
            recordFailure(failure);
        }
        settledNow();
    }

    @Override
    public boolean isDone() {
        return progress();
    }

    @Override
    protected void awaitSettled(long requestedNanos) {
        WaitPolicy.Wait wait = waits.newWait().begin(deadlineNanos());
        while (!progress()) {
            if (wait.expired()) {
                synchronized (this) {
                    if (!done) {
                        done = true; // the requests stay with MPI, and so does their memory
                        recordFailure(timedOut());
                        settledNow();
                    }
                }
                return;
            }
            if (wait.waitedNanos() >= requestedNanos) {
                throw stillRunning(requestedNanos);
            }
            wait.idle();
        }
    }

    private CollectiveTimeoutException timedOut() {
        Collective c = collective();
        return new CollectiveTimeoutException(
                who + ": " + c.describe() + " timed out: rank "
                        + c.root()
                        + (c.kind() == OpKind.SEND ? " did not receive it" : " sent no message with tag " + c.tag()),
                null,
                -1,
                c,
                List.of(c.root()));
    }
}
