package dev.cohort.tcp.transport;

import dev.cohort.api.collective.CollectiveException;
import dev.cohort.api.collective.CollectiveTimeoutException;
import dev.cohort.runtime.RankNames;
import dev.cohort.runtime.WaitPolicy;
import dev.cohort.runtime.store.StoreMeetingBackend;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * A full mesh of plain TCP connections between the ranks of a group. Each exchange sends every
 * peer a fixed-size header of {@code headerWords} longs (what the header means is the caller's:
 * {@code MeshCollectives} puts a call's signature there) and then a payload, and receives theirs;
 * sending, receiving and the caller's work on what arrived overlap.
 *
 * <p>Waiting: a rank whose peers' bytes have not come keeps polling its connections for
 * {@code spin} (--gloo-spin-us) after the last byte moved, then sleeps in a selector until more
 * arrive. Waking from the selector costs more than a small collective's whole exchange, which
 * polling avoids (measured: docs/lab/PERFORMANCE-LOG.md). Polling takes the CPU, so it is off by default where a
 * host runs more ranks than it has CPUs: a rank polling there would take the CPU its peer needs.
 *
 * <p>{@link MeshConnector} connects the ranks; this class only exchanges over the connections.
 */
public final class PeerMesh implements AutoCloseable {

    /** {@link StoreMeetingBackend.Options#DEFAULT_SPIN}: how long a waiting rank polls by default. */
    public static final Duration DEFAULT_SPIN = StoreMeetingBackend.Options.DEFAULT_SPIN;

    private static final ByteBuffer EMPTY = ByteBuffer.allocateDirect(0);

    /** Names what a rank still waits for, once, after the stall time. */
    public interface StallReport {
        Duration after();

        void report(String what, String waitingFor);
    }

    private final int rank;
    private final int size;
    /** A message: {@code headerWords} longs, then the payload's length in bytes, then the payload. */
    private final int headerWords;

    private final SocketChannel[] peers;
    private final SelectionKey[] keys;
    private final ByteBuffer[] inbound;
    private final ByteBuffer[] headerOut;
    private final ByteBuffer[] headerStore;
    private final ByteBuffer[] payloadOut;
    private final ByteBuffer[] payloadIn;
    private final ByteBuffer[] payloadStore;
    private final long[] expected;
    private final long[] all;
    private final ByteBuffer[] writePair = new ByteBuffer[2];
    private final ByteBuffer[] readPair = new ByteBuffer[2];
    private final Selector selector;
    /**
     * How a rank waits for its peers' bytes: it polls its connections for the spin time after the
     * last byte moved, then sleeps in the selector (no yield phase; the parks are the selector's).
     */
    private final WaitPolicy.Wait wait;

    private int payloadMismatch = -1;
    /** How messages name the ranks. */
    private final RankNames names;

    PeerMesh(int rank, int size, int headerWords, SocketChannel[] peers, Duration spin, RankNames names)
            throws IOException {
        this.rank = rank;
        this.names = names;
        this.headerWords = headerWords;
        this.wait = new WaitPolicy(
                        spin.toNanos(), spin.toNanos(), 1_000, 1_000, Long.MAX_VALUE, WaitPolicy.Clock.SYSTEM)
                .newWait();
        this.size = size;
        this.peers = peers;
        this.inbound = new ByteBuffer[size];
        this.headerOut = new ByteBuffer[size];
        this.headerStore = new ByteBuffer[size];
        this.payloadOut = new ByteBuffer[size];
        this.payloadIn = new ByteBuffer[size];
        this.payloadStore = new ByteBuffer[size];
        this.expected = new long[size];
        this.all = new long[size * headerWords];
        int headerBytes = (headerWords + 1) * Long.BYTES;
        this.keys = new SelectionKey[size];
        this.selector = Selector.open();
        for (int j = 0; j < size; j++) {
            if (j != rank) {
                inbound[j] = ByteBuffer.allocateDirect(headerBytes).order(ByteOrder.LITTLE_ENDIAN);
                headerStore[j] = ByteBuffer.allocateDirect(headerBytes).order(ByteOrder.LITTLE_ENDIAN);
                peers[j].configureBlocking(false);
                keys[j] = peers[j].register(selector, SelectionKey.OP_READ, j);
            }
        }
    }

    /** {@link #DEFAULT_SPIN} where the host has a CPU for each of its {@code ranksOnThisHost} ranks, else none. */
    public static Duration defaultSpin(int ranksOnThisHost) {
        return StoreMeetingBackend.Options.defaultSpin(ranksOnThisHost);
    }

    /**
     * What one exchange does with the bytes that arrive: the mesh calls {@link #headersArrived}
     * once every peer's header is in, and {@link #progress} whenever payload bytes moved after
     * that (the receive buffers' positions say how far each peer's payload has come).
     */
    public interface Transfer {
        /** Every rank's header words, rank by rank; false ends the exchange at once (the ranks disagree). */
        boolean headersArrived(long[] all);

        /** Payload bytes were sent or received; the caller may consume what is complete. */
        void progress();
    }

    /**
     * Sends {@code mine} ({@code headerWords} words) and {@code toPeer[j]} to every peer
     * {@code j}, and receives each peer's words and {@code fromPeer[j].remaining()} payload bytes
     * into {@code fromPeer[j]}; {@code null} entries mean no payload. Sending and receiving overlap
     * with each other and with {@code transfer}'s work. When {@code guardPayload} is set, no payload
     * byte is read before {@code transfer} accepted the headers (the receive buffers are the
     * caller's memory, which a mismatched call must not touch). Callers serialize calls.
     *
     * @return false when {@code transfer} refused the headers, or a peer announced a payload of
     *         another length ({@link #payloadMismatch()}); the connections are then out of step
     * @throws CollectiveException        naming the rank whose connection broke (its process is gone)
     * @throws CollectiveTimeoutException naming the ranks that sent nothing before {@code deadline}
     */
    public boolean exchange(
            long[] mine,
            ByteBuffer[] toPeer,
            ByteBuffer[] fromPeer,
            boolean guardPayload,
            long deadlineNanos,
            Supplier<String> what,
            StallReport stall,
            Transfer transfer) {
        for (int j = 0; j < size; j++) {
            if (j != rank) {
                payloadOut[j] = toPeer[j] == null ? EMPTY : toPeer[j];
                ByteBuffer header = headerStore[j].clear();
                for (long w : mine) {
                    header.putLong(w);
                }
                headerOut[j] = header.putLong(payloadOut[j].remaining()).flip();
                inbound[j].clear();
                payloadIn[j] = fromPeer[j] == null ? EMPTY : fromPeer[j];
                expected[j] = payloadIn[j].remaining();
            }
        }
        wait.begin(deadlineNanos)
                .stallAfter(stall == null ? Long.MAX_VALUE : stall.after().toNanos());
        boolean agreed = false;
        payloadMismatch = -1;
        while (true) {
            boolean moved = false;
            boolean pending = false;
            for (int j = 0; j < size; j++) {
                if (j == rank) {
                    continue;
                }
                if (sending(j)) {
                    moved |= send(j, what);
                    pending |= sending(j);
                }
                if (receiving(j, agreed || !guardPayload)) {
                    moved |= receive(j, agreed || !guardPayload, what);
                    pending |= receiving(j, true);
                }
            }
            if (!agreed && headersComplete()) {
                for (int j = 0; j < size; j++) {
                    for (int w = 0; w < headerWords; w++) {
                        all[j * headerWords + w] = j == rank ? mine[w] : inbound[j].getLong(w * Long.BYTES);
                    }
                }
                if (!transfer.headersArrived(all) || payloadMismatch >= 0) {
                    return false;
                }
                agreed = true;
                moved = true;
                pending = pendingAny();
            }
            if (agreed && moved) {
                transfer.progress();
            }
            if (!pending) {
                return true;
            }
            if (moved) {
                wait.moved();
                continue;
            }
            if (wait.expired()) {
                throw new CollectiveTimeoutException(
                        what.get() + " timed out: " + waitingFor(), null, rank, null, waitedFor());
            }
            if (wait.phase() == WaitPolicy.Phase.SPIN) {
                Thread.onSpinWait();
                continue;
            }
            if (stall != null && wait.stalled()) {
                stall.report(what.get(), waitingFor());
                continue;
            }
            try {
                for (int j = 0; j < size; j++) {
                    if (j != rank) {
                        keys[j].interestOps((receiving(j, true) ? SelectionKey.OP_READ : 0)
                                | (sending(j) ? SelectionKey.OP_WRITE : 0));
                    }
                }
                selector.select(Math.max(1, wait.sleepNanos(Long.MAX_VALUE) / 1_000_000));
                selector.selectedKeys().clear();
            } catch (IOException e) {
                throw new CollectiveException(what.get() + " failed waiting for its peers: " + e, e);
            }
        }
    }

    /**
     * A peer whose payload length differed from this rank's in the last {@link #exchange}, or -1.
     * The connections are out of step afterwards: the group must not be used again.
     */
    public int payloadMismatch() {
        return payloadMismatch;
    }

    /** A direct buffer of {@code bytes} for peer {@code j}'s payload, reused between calls. */
    public ByteBuffer receiveBuffer(int j, int bytes) {
        ByteBuffer b = payloadStore[j];
        if (b == null || b.capacity() < bytes) {
            b = ByteBuffer.allocateDirect(Math.max(bytes, 4096)).order(ByteOrder.nativeOrder());
            payloadStore[j] = b;
        }
        return b.clear().limit(bytes);
    }

    private boolean headersComplete() {
        for (int j = 0; j < size; j++) {
            if (j != rank && inbound[j].hasRemaining()) {
                return false;
            }
        }
        return true;
    }

    private boolean pendingAny() {
        for (int j = 0; j < size; j++) {
            if (j != rank && (sending(j) || receiving(j, true))) {
                return true;
            }
        }
        return false;
    }

    private boolean sending(int j) {
        return headerOut[j].hasRemaining() || payloadOut[j].hasRemaining();
    }

    /** Whether peer {@code j}'s header, or (when {@code payloadToo}) its payload, is incomplete. */
    private boolean receiving(int j, boolean payloadToo) {
        return inbound[j].hasRemaining() || (payloadToo && payloadMismatch != j && payloadIn[j].hasRemaining());
    }

    /** Writes what the socket takes; true when some bytes went out. */
    private boolean send(int j, Supplier<String> what) {
        try {
            writePair[0] = headerOut[j];
            writePair[1] = payloadOut[j];
            return peers[j].write(writePair) > 0;
        } catch (IOException e) {
            throw lost(j, what, e);
        }
    }

    /** Reads what peer {@code j} sent (its payload only when {@code payloadToo}); true when some bytes came. */
    private boolean receive(int j, boolean payloadToo, Supplier<String> what) {
        try {
            ByteBuffer header = inbound[j];
            long n;
            if (header.hasRemaining()) {
                if (payloadToo) {
                    readPair[0] = header;
                    readPair[1] = payloadIn[j];
                    n = peers[j].read(readPair);
                } else {
                    n = peers[j].read(header);
                }
                if (n < 0) {
                    throw lost(j, what, null);
                }
                if (!header.hasRemaining() && header.getLong(headerWords * Long.BYTES) != expected[j]) {
                    // The ranks disagree (their headers may say how); this stream is abandoned.
                    payloadMismatch = j;
                }
                return n > 0;
            }
            n = peers[j].read(payloadIn[j]);
            if (n < 0) {
                throw lost(j, what, null);
            }
            return n > 0;
        } catch (IOException e) {
            throw lost(j, what, e);
        }
    }

    /** The ranks this rank still waits for: first those whose call has not come, then those still sending. */
    private String waitingFor() {
        List<Integer> silent = new ArrayList<>();
        List<Integer> sendingStill = new ArrayList<>();
        for (int j = 0; j < size; j++) {
            if (j != rank && inbound[j].hasRemaining()) {
                silent.add(j);
            } else if (j != rank && receiving(j, true)) {
                sendingStill.add(j);
            }
        }
        if (!silent.isEmpty()) {
            return "rank(s) " + names.ranks(silent) + " have not issued it yet (stopped, slow, gone, or calling other "
                    + "collectives?)";
        }
        return "rank(s) " + names.ranks(sendingStill)
                + " issued it but their data has not all arrived (stopped, slow or " + "gone?)";
    }

    /** The ranks this rank still waits for. */
    private List<Integer> waitedFor() {
        List<Integer> ranks = new ArrayList<>();
        for (int j = 0; j < size; j++) {
            if (j != rank && (inbound[j].hasRemaining() || receiving(j, true))) {
                ranks.add(j);
            }
        }
        return ranks;
    }

    /** The error for a broken connection, worded like Gloo's lost-peer errors: "lost peer ADDRESS (rank(s) J)". */
    private CollectiveException lost(int peer, Supplier<String> what, IOException e) {
        String address;
        try {
            address = ((InetSocketAddress) peers[peer].getRemoteAddress())
                    .getAddress()
                    .getHostAddress();
        } catch (IOException | RuntimeException unknown) {
            address = "?";
        }
        return new CollectiveException(
                what.get() + " failed; lost peer " + address + " (rank(s) " + peer + ")"
                        + names.after(List.of(peer)) + ": its connection "
                        + (e == null ? "closed" : "failed: " + e.getMessage())
                        + " (the process is gone or unreachable)",
                e,
                rank,
                null,
                List.of(peer));
    }

    static void closeQuietly(SocketChannel ch) {
        if (ch != null) {
            try {
                ch.close();
            } catch (IOException ignored) {
                // closing anyway
            }
        }
    }

    @Override
    public void close() {
        for (SocketChannel p : peers) {
            closeQuietly(p);
        }
        try {
            selector.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }
}
