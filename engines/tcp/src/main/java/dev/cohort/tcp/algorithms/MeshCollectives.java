package dev.cohort.tcp.algorithms;

import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.CollectiveMismatchException;
import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.runtime.AlltoallCounts;
import dev.cohort.runtime.Blocks;
import dev.cohort.runtime.Reduction;
import dev.cohort.runtime.SignatureWords;
import dev.cohort.tcp.transport.PeerMesh;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Collectives carried over the {@link PeerMesh} with the consistency check built in: a rank's
 * first bytes to each peer (the mesh's header) are its call's {@link SignatureWords signature},
 * and nothing lands in the caller's memory before every rank's signature arrived and matched.
 *
 * <p>Calls the group leaves to Gloo are checked here too ({@link #agree}) before Gloo sees them:
 * Gloo aborts the whole process ({@code std::terminate}) when a message is longer than the
 * receiver expects, and silently mixes data when ranks reduce with different operations. The cost
 * is one small message to each peer and the wait for theirs — which a collective waits for anyway,
 * because it cannot finish before the last rank joins.
 *
 * <p>Algorithms, for p ranks and n bytes:
 * <ul>
 * <li><b>allreduce</b>, up to {@link #BLOCKS_FROM_BYTES}: every rank sends its whole input to
 *     every peer and folds the p inputs itself. A rank sends (p−1)·n bytes, in one step: for
 *     p = 2 as many as a ring's 2(p−1)/p·n, and the fewest round trips.
 * <li><b>allreduce</b>, larger: a reduce-scatter then an allgather over the mesh. The input is cut
 *     into p blocks; rank r receives block r from every peer and folds it, then sends the folded
 *     block to every peer. A rank sends 2(p−1)/p·n bytes (a ring's, in two steps instead of
 *     2(p−1)) and folds n/p elements instead of n.
 * <li><b>broadcast</b>: the root sends to every peer;
 * <li><b>allgather, allgatherv</b>: every rank sends its input to every peer — as many bytes as
 *     a ring, in one step;
 * <li><b>reduce-scatter</b>: every rank sends block j of its input to rank j, which folds the p
 *     copies of its block — as many bytes as a ring, in one step;
 * <li><b>barrier</b>: the signatures alone — no rank leaves before every rank's call arrived;
 * <li>calls the group leaves to Gloo: {@link #agree} exchanges the signatures first.
 * </ul>
 * Folds run in rank order ((x0 op x1) op x2 ...), so every rank computes the same bits, segment
 * by segment while the rest still streams in. Direct caller buffers that expose their bytes
 * ({@link DenseBuffer#bytes()}) are sent from and received into where they lie (no copy); other
 * buffers go through a staging copy.
 */
public final class MeshCollectives {

    /** Bytes folded at a time once every peer's share of them arrived (fits in L2 with its operands). */
    static final int SEGMENT_BYTES = 128 * 1024;

    /**
     * Calls that move more than this per peer travel as several messages, each checked like a call
     * of its own: it bounds the receive buffers a rank keeps per peer and the staging copy of heap
     * inputs, whatever the call's size.
     */
    static final int MAX_MESSAGE_BYTES = Integer.getInteger("cohort.gloo.meshMessageBytes", 64 << 20);

    /** Allreduces of at least this many bytes (per message) reduce-scatter, then allgather. */
    public static final long BLOCKS_FROM_BYTES = Long.getLong("cohort.gloo.meshBlocksFromBytes", 1 << 20);

    /** The mesh's header: a call's signature. */
    public static final int HEADER_WORDS = SignatureWords.WORDS;

    private final PeerMesh mesh;
    private final int rank;
    private final int size;
    private final String who;
    private final long blocksFromBytes;
    private final long[] mine = new long[SignatureWords.WORDS];
    private final ByteBuffer[] toPeer;
    private final ByteBuffer[] fromPeer;
    private ByteBuffer sendStore = ByteBuffer.allocateDirect(0);
    // The call in progress (callers serialize calls): the call, its deadline, whom to tell of a stall.
    private Collective current;
    private long deadlineNanos;
    private PeerMesh.StallReport stall;
    /** The call in progress as errors and stall reports name it; built only when one needs it. */
    private final Supplier<String> what = this::describeCurrent;

    public MeshCollectives(PeerMesh mesh, int rank, int size, String who) {
        this(mesh, rank, size, who, BLOCKS_FROM_BYTES);
    }

    /** {@code blocksFromBytes}: allreduces from this size on reduce-scatter, then allgather. */
    MeshCollectives(PeerMesh mesh, int rank, int size, String who, long blocksFromBytes) {
        this.blocksFromBytes = blocksFromBytes;
        this.mesh = mesh;
        this.rank = rank;
        this.size = size;
        this.who = who;
        this.toPeer = new ByteBuffer[size];
        this.fromPeer = new ByteBuffer[size];
    }

    /** Carries {@code call} over the mesh (one that the group routes here: {@link MeshCalls}). */
    public void carry(Collective call, long deadlineNanos, PeerMesh.StallReport stall) {
        begin(call, deadlineNanos, stall);
        switch (call.kind()) {
            case ALLREDUCE -> inMessages(call.input(), part -> allreducePart(call, part));
            case BROADCAST -> inMessages(call.input(), part -> broadcastPart(call, part));
            case ALLGATHER, ALLGATHERV -> allgather(call);
            case REDUCE_SCATTER -> reduceScatter(call);
            case BARRIER -> agree(call);
            case REDUCE -> inMessages(call.input(), part -> reducePart(call, part));
            case GATHER, GATHERV -> rooted(call, true);
            case SCATTER, SCATTERV -> rooted(call, false);
            case ALLTOALL -> alltoall(call);
            case ALLTOALLV -> alltoallv(call);
        }
    }

    /** Exchanges {@code call}'s signature only: returns when every rank issued the same call (a barrier). */
    public void agree(Collective call, long deadlineNanos, PeerMesh.StallReport stall) {
        begin(call, deadlineNanos, stall);
        agree(call);
    }

    private void begin(Collective call, long deadlineNanos, PeerMesh.StallReport stall) {
        this.current = call;
        this.deadlineNanos = deadlineNanos;
        this.stall = stall;
    }

    private String describeCurrent() {
        return who + ": " + current.describe();
    }

    private void agree(Collective call) {
        clear();
        run(call, false, new Check());
    }

    /** One message's worth of the allreduce of {@code call.input()} in place: {@code data} is a part of it. */
    private void allreducePart(Collective call, DenseBuffer data) {
        if (size > 1 && data.byteSize() >= blocksFromBytes) {
            allreduceInBlocks(call, data);
            return;
        }
        clear();
        int bytes = (int) data.byteSize();
        boolean inPlace = movesInPlace(data);
        ByteBuffer own = inPlace ? bytesOf(data) : staged(data);
        for (int j = 0; j < size; j++) {
            if (j != rank) {
                toPeer[j] = own.duplicate();
                fromPeer[j] = mesh.receiveBuffer(j, bytes);
            }
        }
        Fold fold = new Fold(call, data, inPlace, null);
        run(call, false, fold);
        fold.progress();
    }

    /**
     * The allreduce of {@code data} in place as a reduce-scatter, then an allgather: block r
     * (elements {@code [r·count/p, (r+1)·count/p)}) of every rank's input goes to rank r, which
     * folds the p copies in rank order (so every rank ends with the same bits) and sends the
     * result to every peer. Heap data goes through one staging copy each way.
     */
    private void allreduceInBlocks(Collective call, DenseBuffer data) {
        int e = data.dataType().byteSize();
        int[] offsets = new int[size + 1];
        for (int r = 0; r <= size; r++) {
            offsets[r] = (int) ((long) data.count() * r / size);
        }
        boolean direct = movesInPlace(data);
        ByteBuffer all = direct ? bytesOf(data) : staged(data);
        int mineFrom = offsets[rank] * e;
        int mineBytes = (offsets[rank + 1] - offsets[rank]) * e;
        clear();
        for (int j = 0; j < size; j++) {
            if (j != rank) {
                toPeer[j] = slice(all, offsets[j] * e, (offsets[j + 1] - offsets[j]) * e);
                fromPeer[j] = mesh.receiveBuffer(j, mineBytes);
            }
        }
        DenseBuffer block = DenseBuffer.of(slice(all, mineFrom, mineBytes), data.dataType());
        Fold fold = new Fold(call, block, false, null);
        run(call, false, fold);
        fold.progress();
        clear();
        for (int j = 0; j < size; j++) {
            if (j != rank) {
                toPeer[j] = slice(all, mineFrom, mineBytes);
                fromPeer[j] = slice(all, offsets[j] * e, (offsets[j + 1] - offsets[j]) * e);
            }
        }
        // The second step writes into the caller's memory (or its staging copy) as it arrives:
        // a rank whose call differs by now is caught by the signatures before any byte lands.
        run(call, true, new Check());
        if (!direct) {
            data.copyFrom(DenseBuffer.of(all, data.dataType()));
        }
    }

    /** Calls {@code part} with each message's slice of {@code all}, in order. */
    private static void inMessages(DenseBuffer all, Consumer<DenseBuffer> part) {
        int perMessage = perMessage(all.dataType());
        for (int from = 0; from < all.count(); from += perMessage) {
            part.accept(all.slice(from, Math.min(perMessage, all.count() - from)));
        }
    }

    /** Elements of {@code type} in one message (see {@link #MAX_MESSAGE_BYTES}). */
    private static int perMessage(DataType type) {
        return Math.max(1, MAX_MESSAGE_BYTES / type.byteSize());
    }

    /** One message's worth of the broadcast of the root's {@code call.input()} into every other rank's: {@code data} is a part of it. */
    private void broadcastPart(Collective call, DenseBuffer data) {
        clear();
        int bytes = (int) data.byteSize();
        int root = call.root();
        boolean direct = movesInPlace(data);
        if (rank == root) {
            ByteBuffer own = direct ? bytesOf(data) : staged(data);
            for (int j = 0; j < size; j++) {
                if (j != rank) {
                    toPeer[j] = own.duplicate();
                }
            }
        } else {
            fromPeer[root] = direct ? bytesOf(data) : mesh.receiveBuffer(root, bytes);
        }
        run(call, direct, new Check());
        if (rank != root && !direct) {
            data.copyFrom(DenseBuffer.of(fromPeer[root].flip(), data.dataType()));
        }
    }

    /**
     * Every rank's {@code call.input()}, in rank order, into {@code call.output()} (allgather and
     * allgatherv). Message k carries elements {@code [k P, (k+1) P)} of every rank's block (P =
     * {@link #perMessage}), empty for blocks that short.
     */
    private void allgather(Collective call) {
        DenseBuffer input = call.input();
        DenseBuffer output = call.output();
        int[] counts = call.counts();
        int[] offsets = new int[size + 1];
        int most = 0;
        for (int r = 0; r < size; r++) {
            int count = counts == null ? input.count() : counts[r];
            offsets[r + 1] = offsets[r] + count;
            most = Math.max(most, count);
        }
        int perMessage = perMessage(output.dataType());
        for (int from = 0; from < most; from += perMessage) {
            allgatherPart(call, offsets, from, perMessage);
        }
        output.slice(offsets[rank], offsets[rank + 1] - offsets[rank]).copyFrom(input);
    }

    /** Elements {@code [from, from + perMessage)} of every rank's block. */
    private void allgatherPart(Collective call, int[] offsets, int from, int perMessage) {
        clear();
        DenseBuffer input = call.input();
        DenseBuffer output = call.output();
        int[] length = new int[size];
        for (int r = 0; r < size; r++) {
            length[r] = Math.max(0, Math.min(perMessage, offsets[r + 1] - offsets[r] - from));
        }
        DenseBuffer mine = input.slice(Math.min(from, input.count()), length[rank]);
        boolean direct = movesInPlace(output);
        ByteBuffer own = movesInPlace(mine) ? bytesOf(mine) : staged(mine);
        ByteBuffer result = direct ? bytesOf(output) : null;
        int e = output.dataType().byteSize();
        for (int j = 0; j < size; j++) {
            if (j != rank) {
                toPeer[j] = own.duplicate();
                int bytes = length[j] * e;
                fromPeer[j] = direct ? slice(result, (offsets[j] + from) * e, bytes) : mesh.receiveBuffer(j, bytes);
            }
        }
        run(call, direct, new Check());
        if (!direct) {
            for (int j = 0; j < size; j++) {
                if (j != rank && length[j] > 0) {
                    output.slice(offsets[j] + from, length[j])
                            .copyFrom(DenseBuffer.of(fromPeer[j].flip(), output.dataType()));
                }
            }
        }
    }

    /** Block r of every rank's {@code call.input()} folded into rank r's {@code call.output()}. */
    private void reduceScatter(Collective call) {
        int block = call.output().count();
        int perMessage = perMessage(call.output().dataType());
        for (int from = 0; from < block; from += perMessage) {
            reduceScatterPart(call, block, from, Math.min(perMessage, block - from));
        }
    }

    /** Elements {@code [from, from + length)} of every block. */
    private void reduceScatterPart(Collective call, int block, int from, int length) {
        clear();
        DenseBuffer input = call.input();
        DenseBuffer output = call.output();
        int bytes = length * output.dataType().byteSize();
        ByteBuffer heapParts = movesInPlace(input) ? null : stagedParts(input, block, from, length);
        for (int j = 0; j < size; j++) {
            if (j != rank) {
                toPeer[j] = heapParts == null
                        ? bytesOf(input.slice(j * block + from, length))
                        : slice(heapParts, j * bytes, bytes);
                fromPeer[j] = mesh.receiveBuffer(j, bytes);
            }
        }
        Fold fold = new Fold(call, output.slice(from, length), false, input.slice(rank * block + from, length));
        run(call, false, fold);
        fold.progress();
    }

    /** One message's worth of the reduce of every rank's {@code call.input()} into the root's: {@code data} is a part of it. */
    private void reducePart(Collective call, DenseBuffer data) {
        clear();
        int root = call.root();
        if (rank != root) {
            toPeer[root] = movesInPlace(data) ? bytesOf(data) : staged(data);
            run(call, false, new Check());
            return;
        }
        int bytes = (int) data.byteSize();
        for (int j = 0; j < size; j++) {
            if (j != rank) {
                fromPeer[j] = mesh.receiveBuffer(j, bytes);
            }
        }
        Fold fold = new Fold(call, data, false, null);
        run(call, false, fold);
        fold.progress();
    }

    /**
     * Gather (every rank's input into the root's output, in rank order) and scatter (block r of the
     * root's input into rank r's output), with or without per-rank counts: the root's buffer is
     * cut into one block per rank, and each other rank's own buffer meets its block.
     */
    private void rooted(Collective call, boolean gather) {
        DenseBuffer own = gather ? call.input() : call.output();
        long[] offsets = Blocks.offsets(call.counts(), own.count(), size);
        DenseBuffer[] blocks = new DenseBuffer[size];
        DenseBuffer[] single = new DenseBuffer[size];
        int root = call.root();
        if (rank == root) {
            DenseBuffer whole = gather ? call.output() : call.input();
            for (int j = 0; j < size; j++) {
                blocks[j] = whole.slice((int) offsets[j], (int) (offsets[j + 1] - offsets[j]));
            }
            if (gather) {
                blocks[rank].copyFrom(own);
            } else {
                own.copyFrom(blocks[rank]);
            }
        } else {
            single[root] = own;
        }
        exchange(call, gather ? single : blocks, gather ? blocks : single, (int) Blocks.longest(offsets));
    }

    private void alltoall(Collective call) {
        int block = call.input().count() / size;
        DenseBuffer[] send = new DenseBuffer[size];
        DenseBuffer[] receive = new DenseBuffer[size];
        for (int j = 0; j < size; j++) {
            send[j] = call.input().slice(j * block, block);
            receive[j] = call.output().slice(j * block, block);
        }
        receive[rank].copyFrom(send[rank]);
        exchange(call, send, receive, block);
    }

    /**
     * First every rank's send and receive counts to every peer (with the signature), so that
     * every rank checks every pair before any data moves; then the blocks.
     */
    private void alltoallv(Collective call) {
        clear();
        int[] packed = AlltoallCounts.packed(call.counts(), call.receiveCounts());
        ByteBuffer own = sendStore(packed.length * Integer.BYTES);
        own.asIntBuffer().put(packed);
        for (int j = 0; j < size; j++) {
            if (j != rank) {
                toPeer[j] = own.duplicate();
                fromPeer[j] = mesh.receiveBuffer(j, packed.length * Integer.BYTES);
            }
        }
        run(call, false, new Check());
        int[] all = new int[packed.length * size];
        int longest = 0;
        for (int j = 0; j < size; j++) {
            if (j == rank) {
                System.arraycopy(packed, 0, all, j * packed.length, packed.length);
            } else {
                fromPeer[j].flip().asIntBuffer().get(all, j * packed.length, packed.length);
            }
        }
        for (int c : all) {
            longest = Math.max(longest, c);
        }
        String disagreement = AlltoallCounts.disagreement(what.get(), all, size);
        if (disagreement != null) {
            throw new CollectiveMismatchException(disagreement);
        }
        DenseBuffer[] send = new DenseBuffer[size];
        DenseBuffer[] receive = new DenseBuffer[size];
        int sent = 0;
        int received = 0;
        for (int j = 0; j < size; j++) {
            send[j] = call.input().slice(sent, call.counts()[j]);
            receive[j] = call.output().slice(received, call.receiveCounts()[j]);
            sent += call.counts()[j];
            received += call.receiveCounts()[j];
        }
        receive[rank].copyFrom(send[rank]);
        exchange(call, send, receive, longest);
    }

    /**
     * Sends {@code send[j]} to peer j and receives peer j's into {@code receive[j]} ({@code null}:
     * nothing), in messages: message k carries elements {@code [k P, (k+1) P)} of every pair's
     * buffers (P = {@link #perMessage}); {@code longest}, the most elements any pair of any rank
     * moves, sets how many messages there are, alike on every rank.
     */
    private void exchange(Collective call, DenseBuffer[] send, DenseBuffer[] receive, int longest) {
        DataType type = call.dataType();
        int e = type.byteSize();
        int perMessage = perMessage(type);
        int messages = Math.max(1, (longest + perMessage - 1) / perMessage);
        for (int k = 0; k < messages; k++) {
            int from = k * perMessage;
            clear();
            DenseBuffer[] sendPart = new DenseBuffer[size];
            int stagedBytes = 0;
            boolean direct = true;
            for (int j = 0; j < size; j++) {
                if (j == rank) {
                    continue;
                }
                sendPart[j] = part(send[j], from, perMessage);
                if (sendPart[j] != null && !movesInPlace(sendPart[j])) {
                    stagedBytes += (int) sendPart[j].byteSize();
                }
                DenseBuffer into = part(receive[j], from, perMessage);
                if (into != null) {
                    direct &= movesInPlace(into);
                }
            }
            ByteBuffer staging = stagedBytes > 0 ? sendStore(stagedBytes) : null;
            int at = 0;
            for (int j = 0; j < size; j++) {
                if (j == rank) {
                    continue;
                }
                DenseBuffer out = sendPart[j];
                if (out != null && out.count() > 0 && movesInPlace(out)) {
                    toPeer[j] = bytesOf(out);
                } else if (out != null && out.count() > 0) {
                    toPeer[j] = slice(staging, at, (int) out.byteSize());
                    DenseBuffer.of(toPeer[j].duplicate(), type).copyFrom(out);
                    at += (int) out.byteSize();
                }
                DenseBuffer into = part(receive[j], from, perMessage);
                if (into != null) {
                    fromPeer[j] = direct ? bytesOf(into) : mesh.receiveBuffer(j, (int) into.count() * e);
                }
            }
            run(call, direct, new Check());
            if (!direct) {
                for (int j = 0; j < size; j++) {
                    DenseBuffer into = j == rank ? null : part(receive[j], from, perMessage);
                    if (into != null && into.count() > 0) {
                        into.copyFrom(DenseBuffer.of(fromPeer[j].flip(), type));
                    }
                }
            }
        }
    }

    /** Elements {@code [from, from + most)} of {@code b}, clipped; {@code null} when {@code b} is. */
    private static DenseBuffer part(DenseBuffer b, int from, int most) {
        if (b == null) {
            return null;
        }
        int start = Math.min(from, b.count());
        return b.slice(start, Math.min(most, b.count() - start));
    }

    private static ByteBuffer slice(ByteBuffer all, int from, int length) {
        return all.duplicate().limit(from + length).position(from).slice().order(ByteOrder.nativeOrder());
    }

    private void run(Collective call, boolean guardPayload, Check check) {
        SignatureWords.encode(call, mine, 0);
        if (!mesh.exchange(mine, toPeer, fromPeer, guardPayload, deadlineNanos, what, stall, check)) {
            throw new CollectiveMismatchException(
                    check.disagreement != null
                            ? check.disagreement
                            : what.get() + ": rank " + mesh.payloadMismatch()
                                    + " sent its data another way; start every rank "
                                    + "with the same --gloo-direct-max-bytes");
        }
    }

    private void clear() {
        Arrays.fill(toPeer, null);
        Arrays.fill(fromPeer, null);
    }

    /** Whether the mesh sends from and receives into {@code data}'s own memory: direct, with its bytes exposed. */
    private static boolean movesInPlace(DenseBuffer data) {
        return data.isDirect() && data.bytes().isPresent();
    }

    /** The bytes of a buffer that {@link #movesInPlace}, where they lie. */
    private static ByteBuffer bytesOf(DenseBuffer data) {
        return data.bytes().orElseThrow();
    }

    /** A direct copy of a heap buffer, reused between calls. */
    private ByteBuffer staged(DenseBuffer data) {
        ByteBuffer b = sendStore((int) data.byteSize());
        DenseBuffer.of(b, data.dataType()).copyFrom(data);
        return b;
    }

    /** Elements {@code [from, from + length)} of each of the {@code size} blocks of a heap buffer, one after another. */
    private ByteBuffer stagedParts(DenseBuffer data, int block, int from, int length) {
        ByteBuffer b = sendStore(size * length * data.dataType().byteSize());
        DenseBuffer parts = DenseBuffer.of(b, data.dataType());
        for (int j = 0; j < size; j++) {
            parts.slice(j * length, length).copyFrom(data.slice(j * block + from, length));
        }
        return b;
    }

    /** {@code bytes} of the reused staging buffer. */
    private ByteBuffer sendStore(int bytes) {
        if (sendStore.capacity() < bytes) {
            sendStore = ByteBuffer.allocateDirect(Math.max(bytes, 4096)).order(ByteOrder.nativeOrder());
        }
        return sendStore.clear().limit(bytes).slice().order(ByteOrder.nativeOrder());
    }

    /** Accepts the signatures only when every rank's match; moves no data itself. */
    private class Check implements PeerMesh.Transfer {
        String disagreement;

        @Override
        public boolean headersArrived(long[] all) {
            disagreement = SignatureWords.disagreement(who, all, size);
            return disagreement == null;
        }

        @Override
        public void progress() {}
    }

    /**
     * Folds every peer's copy of {@code target}'s elements (arriving in {@code fromPeer}) into
     * {@code target}, as they complete. A byte range is folded once every peer's copy of it
     * arrived and — when {@code target} is also what is being sent — once it went out to every
     * peer, since folding overwrites it.
     */
    private final class Fold extends Check {

        @Override
        public boolean headersArrived(long[] all) {
            boolean agreed = super.headersArrived(all);
            if (agreed && ownInput != null) {
                target.copyFrom(ownInput);
            }
            return agreed;
        }

        private final Collective call;
        private final DenseBuffer target;
        private final int bytes;
        private final int elementBytes;
        private final boolean sendsFromTarget;
        private final DenseBuffer ownInput;
        private int folded;

        /** {@code ownInput}: this rank's operand when it is not already in {@code target} (copied there once the call is agreed). */
        Fold(Collective call, DenseBuffer target, boolean sendsFromTarget, DenseBuffer ownInput) {
            this.call = call;
            this.ownInput = ownInput;
            this.target = target;
            this.bytes = (int) target.byteSize();
            this.elementBytes = target.dataType().byteSize();
            this.sendsFromTarget = sendsFromTarget;
        }

        @Override
        public void progress() {
            int ready = bytes;
            for (int j = 0; j < size; j++) {
                if (j != rank) {
                    ready = Math.min(ready, fromPeer[j].position());
                    if (sendsFromTarget) {
                        ready = Math.min(ready, toPeer[j].position());
                    }
                }
            }
            ready -= ready % elementBytes;
            if (ready == folded || (ready < bytes && ready - folded < SEGMENT_BYTES)) {
                return;
            }
            fold(folded, ready);
            folded = ready;
        }

        /**
         * The result over bytes {@code [from, to)}: rank order, so every rank computes the same
         * bits; an average divides in the same pass as the last fold.
         */
        private void fold(int from, int to) {
            DataType type = target.dataType();
            DenseBuffer out = target.slice(from / elementBytes, (to - from) / elementBytes);
            if (size == 1) {
                Reduction.finish(call.op(), out, size);
                return;
            }
            if (type.isHalfPrecision()) {
                // computed in float32 over every rank's operand, rounded to 16 bits once
                java.util.List<DenseBuffer> operands = new java.util.ArrayList<>(size);
                for (int r = 0; r < size; r++) {
                    operands.add(r == rank ? out : segment(r, from, to, type));
                }
                Reduction.foldHalves(call.op(), operands, out, size);
                return;
            }
            if (rank > 0) {
                // out holds x_rank: fold x0 op ... op x_(rank-1) in the first receive buffer, put it in front.
                DenseBuffer lower = segment(0, from, to, type);
                for (int r = 1; r < rank; r++) {
                    Reduction.accumulate(call.op(), lower, segment(r, from, to, type));
                }
                if (rank == size - 1) {
                    Reduction.accumulateLeftAndFinish(call.op(), lower, out, size);
                    return;
                }
                Reduction.accumulateLeft(call.op(), lower, out);
            }
            for (int r = rank + 1; r < size - 1; r++) {
                Reduction.accumulate(call.op(), out, segment(r, from, to, type));
            }
            Reduction.accumulateAndFinish(call.op(), out, segment(size - 1, from, to, type), size);
        }

        private DenseBuffer segment(int peer, int from, int to, DataType type) {
            return DenseBuffer.of(fromPeer[peer].duplicate().limit(to).position(from), type);
        }
    }
}
