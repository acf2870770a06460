package dev.cohort.tcp.transport;

import dev.cohort.api.collective.CollectiveException;
import dev.cohort.api.collective.CollectiveTimeoutException;
import dev.cohort.api.collective.JoinException;
import dev.cohort.runtime.Daemons;
import dev.cohort.runtime.EngineOptions;
import dev.cohort.runtime.RankNames;
import dev.cohort.runtime.WaitPolicy;
import dev.cohort.runtime.auth.AuthenticationException;
import dev.cohort.runtime.auth.Handshake;
import dev.cohort.runtime.auth.JobSecret;
import dev.cohort.runtime.auth.Refusals;
import dev.cohort.runtime.store.Store;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

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
 * <p>Wiring: each rank listens on an ephemeral port of the given address, publishes it in the
 * group's store, connects to every lower rank and accepts every higher one. With a job secret a
 * connection first passes the {@link Handshake}; then it opens with a hello (a magic number, the
 * group's size and the sender's rank), and anything else is closed, logged and ignored. Without a
 * secret the hello only keeps out strangers that do not speak the protocol. The listening socket
 * is closed as soon as the mesh is complete.
 */
public final class PeerMesh implements AutoCloseable {

    /**
     * Default time a rank waiting for its peers' data keeps polling its connections before it
     * sleeps in the kernel, where its host has a CPU for every rank. Waking from that sleep takes
     * longer than a small collective takes when the data is polled for (measured: docs/lab/PERFORMANCE-LOG.md).
     */
    public static final Duration DEFAULT_SPIN = Duration.ofNanos(50_000);

    private static final long MAGIC = 0x436f686f72745347L; // "CohortSG"
    /** What both ends name in the {@link Handshake}. */
    private static final String PURPOSE = "cohort peer mesh";

    private static final long HELLO_MILLIS = 5_000;
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

    private PeerMesh(int rank, int size, int headerWords, SocketChannel[] peers, Duration spin, RankNames names)
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
        return EngineOptions.spinWhereCpusAllow(ranksOnThisHost, DEFAULT_SPIN);
    }

    /**
     * Connects this rank to every other rank of the group, listening on {@code address}; the
     * addresses meet in {@code store} under each rank's number. Messages carry {@code headerWords}
     * longs of header; its messages name ranks with {@code names}. Fails with a
     * {@link JoinException} after {@code timeout}.
     */
    public static PeerMesh connect(
            Store store,
            int rank,
            int size,
            int headerWords,
            InetAddress address,
            Duration timeout,
            Duration spin,
            String who,
            RankNames names,
            Optional<JobSecret> secret) {
        ServerSocketChannel server;
        try {
            server = listen(address, size);
            store.set(Integer.toString(rank), addressOf(server));
        } catch (IOException | RuntimeException e) {
            throw new JoinException(who + ": could not listen for the peer mesh on " + address + ": " + e, e);
        }
        return connect(server, store, rank, size, headerWords, timeout, spin, who, names, secret);
    }

    /** A server socket for {@link #connect(ServerSocketChannel, Store, int, int, int, Duration, Duration, String, RankNames, Optional)}, on {@code address}. */
    public static ServerSocketChannel listen(InetAddress address, int size) throws IOException {
        ServerSocketChannel server = ServerSocketChannel.open();
        try {
            server.bind(new InetSocketAddress(address, 0), size);
            return server;
        } catch (IOException e) {
            server.close();
            throw e;
        }
    }

    /** {@code server}'s address as the mesh's store holds it. */
    public static String addressOf(ServerSocketChannel server) {
        try {
            InetSocketAddress local = (InetSocketAddress) server.getLocalAddress();
            return local.getAddress().getHostAddress() + " " + local.getPort();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /**
     * As {@link #connect(Store, int, int, int, InetAddress, Duration, Duration, String, RankNames, Optional)},
     * with this rank listening on {@code server} already and its address ({@link #addressOf}) in
     * {@code store} or about to be: for groups whose ranks exchange addresses some other way.
     * Closes {@code server}.
     */
    public static PeerMesh connect(
            ServerSocketChannel server,
            Store store,
            int rank,
            int size,
            int headerWords,
            Duration timeout,
            Duration spin,
            String who,
            RankNames names,
            Optional<JobSecret> secret) {
        long deadline = System.nanoTime() + timeout.toNanos();
        SocketChannel[] peers = new SocketChannel[size];
        try (server) {
            for (int j = 0; j < rank; j++) {
                peers[j] = dial(store, j, rank, size, deadline, who, secret);
            }
            accept(server, peers, rank, size, deadline, who, secret);
            return new PeerMesh(rank, size, headerWords, peers, spin, names);
        } catch (IOException | RuntimeException e) {
            for (SocketChannel p : peers) {
                closeQuietly(p);
            }
            if (e instanceof JoinException g) {
                throw g;
            }
            throw new JoinException(who + ": could not connect the peer mesh within " + timeout + ": " + e, e);
        }
    }

    private static SocketChannel dial(
            Store store, int peer, int rank, int size, long deadline, String who, Optional<JobSecret> secret)
            throws IOException {
        String key = Integer.toString(peer);
        try {
            store.await(List.of(key), deadline);
        } catch (RuntimeException e) {
            throw new JoinException(who + ": rank " + peer + " did not publish its peer-mesh address in time", e);
        }
        String[] hostPort = store.get(key).split(" ");
        SocketChannel ch = SocketChannel.open();
        try {
            ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
            ch.socket().connect(new InetSocketAddress(hostPort[0], Integer.parseInt(hostPort[1])), (int)
                    Math.min(Integer.MAX_VALUE, remainingMillis(deadline)));
            if (secret.isPresent()) {
                try {
                    Handshake.asClient(
                            ch.socket(),
                            secret.get(),
                            PURPOSE,
                            Duration.ofMillis(Math.max(1, Math.min(HELLO_MILLIS, remainingMillis(deadline)))));
                } catch (AuthenticationException e) {
                    ch.close();
                    throw new JoinException(
                            who + ": the peer-mesh address rank " + peer + " published (" + hostPort[0] + ":"
                                    + hostPort[1] + ") failed authentication: " + e.getMessage(),
                            null);
                }
            }
            ByteBuffer hello = ByteBuffer.allocate(3 * Long.BYTES)
                    .order(ByteOrder.LITTLE_ENDIAN)
                    .putLong(MAGIC)
                    .putLong(size)
                    .putLong(rank)
                    .flip();
            while (hello.hasRemaining()) {
                ch.write(hello);
            }
            return ch;
        } catch (IOException e) {
            ch.close();
            throw new JoinException(
                    who + ": could not reach rank " + peer + " at " + hostPort[0] + ":" + hostPort[1]
                            + " for the peer mesh: " + e.getMessage(),
                    e);
        }
    }

    /**
     * Accepts the higher ranks; a connection without a valid handshake and hello is closed, logged
     * and ignored. Each connection says who it is on a thread of its own, so strangers that connect
     * and wait cannot keep a rank waiting behind them; at most {@value #MAX_WAITING} wait at once.
     */
    private static void accept(
            ServerSocketChannel server,
            SocketChannel[] peers,
            int rank,
            int size,
            long deadline,
            String who,
            Optional<JobSecret> secret)
            throws IOException {
        int expected = size - 1 - rank;
        if (expected == 0) {
            return;
        }
        Refusals refusals = new Refusals(who + ": peer mesh on " + server.getLocalAddress());
        Arrivals arrivals = new Arrivals();
        Daemons.start("cohort-mesh-accept", () -> {
            while (server.isOpen()) {
                SocketChannel ch;
                try {
                    ch = server.accept();
                } catch (IOException e) {
                    return; // closed: the mesh is complete, or failed
                }
                if (!arrivals.admit()) {
                    refusals.refused(remoteOf(ch), MAX_WAITING + " connections are waiting to say who they are");
                    closeQuietly(ch);
                    continue;
                }
                Daemons.start("cohort-mesh-hello", () -> arrivals.arrived(ch, introduce(ch, size, deadline, secret)));
            }
        });
        try {
            while (expected > 0) {
                Arrival a = arrivals.next(remainingMillis(deadline));
                if (a == null) {
                    List<Integer> missing = new ArrayList<>();
                    for (int j = rank + 1; j < size; j++) {
                        if (peers[j] == null) {
                            missing.add(j);
                        }
                    }
                    throw new JoinException(
                            who + ": rank(s) " + missing + " did not connect the peer mesh in time", null);
                }
                if (a.refusal() != null || a.peer() <= rank || peers[a.peer()] != null) {
                    refusals.refused(
                            remoteOf(a.channel()),
                            a.refusal() != null
                                    ? a.refusal()
                                    : "rank " + a.peer() + " may not connect here (only ranks above " + rank
                                            + ", once each)");
                    closeQuietly(a.channel());
                    continue;
                }
                a.channel().setOption(StandardSocketOptions.TCP_NODELAY, true);
                peers[a.peer()] = a.channel();
                expected--;
            }
        } finally {
            arrivals.closeLate();
        }
    }

    /** At most this many accepted connections may be saying who they are at once. */
    private static final int MAX_WAITING = 256;

    /** An accepted connection that said who it is: its rank, or why it is refused. */
    private record Arrival(SocketChannel channel, int peer, String refusal) {}

    /** Authenticates (with a secret) and reads the hello of an accepted connection. */
    private static Arrival introduce(SocketChannel ch, int size, long deadline, Optional<JobSecret> secret) {
        long helloMillis = Math.max(1, Math.min(HELLO_MILLIS, remainingMillis(deadline)));
        if (secret.isPresent()) {
            try {
                Handshake.asServer(ch.socket(), secret.get(), PURPOSE, Duration.ofMillis(helloMillis));
            } catch (AuthenticationException | IOException e) {
                return new Arrival(ch, -1, e.getMessage());
            }
        }
        int peer = readHello(ch, size, helloMillis);
        return new Arrival(ch, peer, peer < 0 ? "no valid hello of this group" : null);
    }

    /** Connections that said who they are, handed from their threads to the accepting rank. */
    private static final class Arrivals {
        private final java.util.ArrayDeque<Arrival> queue = new java.util.ArrayDeque<>();
        private int waiting;
        private boolean late;

        synchronized boolean admit() {
            if (waiting >= MAX_WAITING) {
                return false;
            }
            waiting++;
            return true;
        }

        synchronized void arrived(SocketChannel ch, Arrival a) {
            waiting--;
            if (late) {
                closeQuietly(ch); // the mesh no longer waits for anyone
                return;
            }
            queue.add(a);
            notifyAll();
        }

        /** The next arrival, or null after {@code millis}. */
        synchronized Arrival next(long millis) {
            long end = System.nanoTime() + millis * 1_000_000;
            while (queue.isEmpty()) {
                long left = (end - System.nanoTime()) / 1_000_000;
                if (left <= 0) {
                    return null;
                }
                try {
                    wait(left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return null;
                }
            }
            return queue.poll();
        }

        /** From now on arrivals are closed; those not taken yet too. */
        synchronized void closeLate() {
            late = true;
            for (Arrival a : queue) {
                closeQuietly(a.channel());
            }
            queue.clear();
        }
    }

    private static Object remoteOf(SocketChannel ch) {
        try {
            return ch.getRemoteAddress();
        } catch (IOException e) {
            return "?";
        }
    }

    /** The rank in a valid hello, or -1 (wrong magic or size, too short, too slow). */
    private static int readHello(SocketChannel ch, int size, long timeoutMillis) {
        try {
            ch.socket().setSoTimeout((int) Math.max(1, timeoutMillis));
            byte[] hello = ch.socket().getInputStream().readNBytes(3 * Long.BYTES);
            if (hello.length < 3 * Long.BYTES) {
                return -1;
            }
            ByteBuffer b = ByteBuffer.wrap(hello).order(ByteOrder.LITTLE_ENDIAN);
            if (b.getLong() != MAGIC || b.getLong() != size) {
                return -1;
            }
            long r = b.getLong();
            ch.socket().setSoTimeout(0);
            return r < 0 || r >= size ? -1 : (int) r;
        } catch (IOException e) {
            return -1;
        }
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
            String what,
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
                        what + " timed out: " + waitingFor(), null, rank, null, waitedFor());
            }
            if (wait.phase() == WaitPolicy.Phase.SPIN) {
                Thread.onSpinWait();
                continue;
            }
            if (stall != null && wait.stalled()) {
                stall.report(what, waitingFor());
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
                throw new CollectiveException(what + " failed waiting for its peers: " + e, e);
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
    private boolean send(int j, String what) {
        try {
            writePair[0] = headerOut[j];
            writePair[1] = payloadOut[j];
            return peers[j].write(writePair) > 0;
        } catch (IOException e) {
            throw lost(j, what, e);
        }
    }

    /** Reads what peer {@code j} sent (its payload only when {@code payloadToo}); true when some bytes came. */
    private boolean receive(int j, boolean payloadToo, String what) {
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
    private CollectiveException lost(int peer, String what, IOException e) {
        String address;
        try {
            address = ((InetSocketAddress) peers[peer].getRemoteAddress())
                    .getAddress()
                    .getHostAddress();
        } catch (IOException | RuntimeException unknown) {
            address = "?";
        }
        return new CollectiveException(
                what + " failed; lost peer " + address + " (rank(s) " + peer + ")"
                        + names.after(List.of(peer)) + ": its connection "
                        + (e == null ? "closed" : "failed: " + e.getMessage())
                        + " (the process is gone or unreachable)",
                e,
                rank,
                null,
                List.of(peer));
    }

    private static long remainingMillis(long deadline) {
        return Math.max(1, (deadline - System.nanoTime()) / 1_000_000);
    }

    private static void closeQuietly(SocketChannel ch) {
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
