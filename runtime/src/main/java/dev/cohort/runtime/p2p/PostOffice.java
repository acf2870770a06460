package dev.cohort.runtime.p2p;

import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.CollectiveException;
import dev.cohort.api.collective.CollectiveTimeoutException;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.OpKind;
import dev.cohort.api.collective.Work;
import dev.cohort.runtime.Daemons;
import dev.cohort.runtime.PendingWork;
import dev.cohort.runtime.RankNames;
import dev.cohort.runtime.auth.AuthenticationException;
import dev.cohort.runtime.auth.Handshake;
import dev.cohort.runtime.auth.JobSecret;
import dev.cohort.runtime.auth.PeerHello;
import dev.cohort.runtime.auth.Refusals;
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
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * Point-to-point messages between the ranks of a group (send and recv), over TCP connections of
 * their own, apart from the group's collectives.
 *
 * <p>Each rank listens on one port, published in a {@link Directory}. A pair connects at the first
 * message either way: the lower rank dials (the higher waits for it), so every pair has one
 * connection. A message is a 16-byte header (tag, byte count) and the bytes. Receives match
 * messages in order per peer and tag; a message that arrives before its receive is kept (copied)
 * until one is posted. A send completes once its bytes are written, a receive once they are in the
 * caller's buffer. A receive whose buffer differs in length from the message fails, naming both.
 * One thread per group moves every connection's bytes (a selector); sends and receives only queue
 * work for it. With a job secret every connection first passes the {@link Handshake}; an accepted
 * connection that does not, or says no valid hello within {@value #HELLO_MILLIS} ms, is closed and
 * logged.
 */
public final class PostOffice implements AutoCloseable {

    private static final long MAGIC = 0x436f686f72745032L; // "CohortP2"
    private static final int HEADER_BYTES = 16;
    /** How long dialing a peer that published its address may take. */
    private static final int CONNECT_MILLIS = 30_000;
    /** How long an accepted connection may take to authenticate and say which rank dialed. */
    private static final long HELLO_MILLIS = 10_000;

    private static final String PURPOSE = "cohort messages";

    private final int rank;
    private final int size;
    private final String who;
    private final RankNames names;
    private final Directory directory;
    private final Optional<JobSecret> secret;
    private final Refusals refusals;
    /** What this rank says first on a connection it dials, and what it expects on one it accepts. */
    private final PeerHello peerHello;
    /** Accepted connections that have not said which rank dialed yet (the selector thread's). */
    private final ArrayDeque<Hello> hellos = new ArrayDeque<>();

    private final ServerSocketChannel server;
    private final Selector selector;
    private final Peer[] peers;
    private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    private final Thread loop;
    private volatile boolean closed;

    /**
     * Listens on {@code address} (port 0: any) and publishes it; {@code who} starts messages ("tcp
     * world rank 0 of 4"). With a {@code secret}, every connection proves it both ways.
     */
    public PostOffice(
            int rank,
            int size,
            InetAddress address,
            Directory directory,
            String who,
            RankNames names,
            Optional<JobSecret> secret) {
        this.rank = rank;
        this.secret = secret;
        this.size = size;
        this.peerHello = new PeerHello(MAGIC, size);
        this.who = who;
        this.names = names;
        this.directory = directory;
        this.peers = new Peer[size];
        for (int j = 0; j < size; j++) {
            peers[j] = new Peer(j);
        }
        try {
            selector = Selector.open();
            server = ServerSocketChannel.open();
            server.bind(new InetSocketAddress(address, 0));
            server.configureBlocking(false);
            server.register(selector, SelectionKey.OP_ACCEPT);
        } catch (IOException e) {
            throw new CollectiveException(
                    who + ": cannot listen for point-to-point messages on " + address + ": " + e, e);
        }
        refusals = new Refusals(who + ": messages on " + serverAddress());
        directory.publish(rank, (InetSocketAddress) serverAddress());
        loop = Daemons.thread("cohort-p2p-" + who.replace(' ', '-'), this::run);
        loop.start();
    }

    private java.net.SocketAddress serverAddress() {
        try {
            return server.getLocalAddress();
        } catch (IOException e) {
            throw new CollectiveException(who + ": " + e, e);
        }
    }

    /** Queues {@code call} (a send or a recv: its root is the peer, its tag {@link Collective#tag()}). */
    public Work post(Collective call, Duration timeout) {
        int peer = call.root();
        PendingWork work = new PendingWork(call, timeout, w -> timedOut(w));
        if (closed) {
            work.fail(new CollectiveException(who + ": " + call.describe() + ": the group is closed"));
            return work;
        }
        Peer p = peers[peer];
        InetSocketAddress dial = null;
        if (rank < peer && p.needsDialing()) {
            try {
                dial = directory.lookup(peer, System.nanoTime() + timeout.toNanos());
            } catch (RuntimeException e) {
                work.fail(new CollectiveException(
                        who + ": " + call.describe() + ": cannot find rank " + names.rank(peer) + ": " + e.getMessage(),
                        e));
                return work;
            }
        }
        InetSocketAddress to = dial;
        // Heap data is copied now: the caller may change it as soon as send returns.
        ByteBuffer payload = call.kind() == OpKind.SEND ? bytesOf(call.input()) : null;
        tasks.add(() -> {
            if (to != null) {
                p.dial(to);
            }
            if (payload != null) {
                p.send(new Outgoing(call, work, payload));
            } else {
                p.receive(new Incoming(call, work));
            }
        });
        selector.wakeup();
        return work;
    }

    private CollectiveException timedOut(PendingWork w) {
        Collective c = w.collective();
        boolean connected = peers[c.root()].channel != null;
        return new CollectiveTimeoutException(
                who + ": " + c.describe() + " timed out: "
                        + (!connected
                                ? "rank " + names.rank(c.root())
                                        + " never connected (it has sent or received nothing to or from this rank)"
                                : c.kind() == OpKind.SEND
                                        ? "rank " + names.rank(c.root()) + " did not take its bytes"
                                        : "rank " + names.rank(c.root()) + " sent no message with tag " + c.tag()),
                null,
                rank,
                c,
                List.of(c.root()));
    }

    // ----- the selector thread ---------------------------------------------------------------

    private void run() {
        try {
            while (!closed) {
                Runnable t;
                while ((t = tasks.poll()) != null) {
                    t.run();
                }
                selector.select(200);
                Iterator<SelectionKey> keys = selector.selectedKeys().iterator();
                while (keys.hasNext()) {
                    SelectionKey key = keys.next();
                    keys.remove();
                    if (!key.isValid()) {
                        continue;
                    }
                    if (key.isAcceptable()) {
                        accept();
                    } else {
                        ((Channel) key.attachment()).ready(key);
                    }
                }
                expireHellos(System.nanoTime());
            }
        } catch (IOException | RuntimeException e) {
            if (!closed) {
                failAll(new CollectiveException(who + ": point-to-point messaging stopped: " + e, e));
            }
        }
    }

    private void accept() throws IOException {
        SocketChannel ch = server.accept();
        if (ch == null) {
            return;
        }
        ch.configureBlocking(false);
        ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
        Hello hello = new Hello(ch);
        hello.key = ch.register(selector, SelectionKey.OP_READ, hello);
        hellos.add(hello);
    }

    private void expireHellos(long now) {
        while (!hellos.isEmpty() && now - hellos.peek().acceptedAt > HELLO_MILLIS * 1_000_000) {
            hellos.peek().refuse("no handshake and hello within " + HELLO_MILLIS + " ms");
        }
    }

    private void failAll(CollectiveException cause) {
        for (Peer p : peers) {
            p.fail(cause);
        }
    }

    /** What a registered channel does when it is ready. */
    private interface Channel {
        void ready(SelectionKey key) throws IOException;
    }

    /**
     * An accepted connection until it says which rank dialed: with a secret, first the handshake
     * (its hello, our answer, its proof), then the rank's {@link PeerHello}.
     */
    private final class Hello implements Channel {
        final SocketChannel ch;
        final long acceptedAt = System.nanoTime();
        final Handshake handshake =
                secret.map(s -> Handshake.server(s, PURPOSE)).orElse(null);
        SelectionKey key;
        /** 0: the handshake's hello, 1: its proof, 2: the rank's hello. */
        int phase = handshake == null ? 2 : 0;

        ByteBuffer in = handshake == null ? PeerHello.buffer() : ByteBuffer.allocate(Handshake.HELLO_BYTES);

        Hello(SocketChannel ch) {
            this.ch = ch;
        }

        @Override
        public void ready(SelectionKey key) {
            try {
                if (ch.read(in) < 0) {
                    refuse("closed before " + (phase < 2 ? "authenticating" : "saying which rank dialed"));
                    return;
                }
                if (phase == 0 && !Handshake.mayOpenHandshake(in.array(), in.position())) {
                    handshake.answer(in.array()); // refuses, saying why
                }
                if (in.hasRemaining()) {
                    return;
                }
                if (phase == 0) {
                    ByteBuffer answer = ByteBuffer.wrap(handshake.answer(in.array()));
                    ch.write(answer);
                    if (answer.hasRemaining()) {
                        refuse("does not read its handshake's answer");
                        return;
                    }
                    phase = 1;
                    in = ByteBuffer.allocate(Handshake.PROOF_BYTES);
                    return;
                }
                if (phase == 1) {
                    handshake.check(in.array());
                    phase = 2;
                    in = PeerHello.buffer();
                    return;
                }
            } catch (AuthenticationException e) {
                refuse(e.getMessage());
                return;
            } catch (IOException e) {
                refuse(e.toString());
                return;
            }
            int from = peerHello.rankIn(in);
            if (from < 0 || from >= rank || peers[from].channel != null) {
                refuse(
                        from < 0
                                ? "no hello of a rank of this group"
                                : "rank " + from + " may not dial here (only ranks below " + rank + ", once each)");
                return;
            }
            hellos.remove(this);
            peers[from].attach(ch, key);
        }

        void refuse(String why) {
            hellos.remove(this);
            Object from;
            try {
                from = ch.getRemoteAddress();
            } catch (IOException e) {
                from = "?";
            }
            refusals.refused(from, why);
            key.cancel();
            try {
                ch.close();
            } catch (IOException ignored) {
                // closing anyway
            }
        }
    }

    private record Outgoing(Collective call, PendingWork work, ByteBuffer payload) {}

    private record Incoming(Collective call, PendingWork work) {}

    /** One peer: its connection, the sends queued to it, the receives posted for it, and messages that came early. */
    private final class Peer implements Channel {
        final int j;
        SocketChannel channel;
        SelectionKey key;
        /** Why this peer can no longer be reached; later messages to or from it fail at once. */
        CollectiveException lost;

        boolean dialing;
        final ArrayDeque<Outgoing> sends = new ArrayDeque<>();
        final ByteBuffer[] writing = new ByteBuffer[2];
        final Map<Integer, ArrayDeque<Incoming>> receives = new HashMap<>();
        final Map<Integer, ArrayDeque<ByteBuffer>> early = new HashMap<>();
        final ByteBuffer header = ByteBuffer.allocate(HEADER_BYTES).order(ByteOrder.BIG_ENDIAN);
        /** The message being read: where its bytes go, and the receive it completes (null: kept as early, or discarded). */
        ByteBuffer body;

        Incoming bodyFor;
        int bodyTag;
        boolean keepBody;
        DenseBuffer copyInto;

        Peer(int j) {
            this.j = j;
        }

        /** Called on callers' threads: whether this rank dials j and has not begun to. */
        synchronized boolean needsDialing() {
            return channel == null && !dialing;
        }

        void dial(InetSocketAddress to) {
            synchronized (this) {
                if (channel != null || dialing) {
                    return;
                }
                dialing = true;
            }
            try {
                SocketChannel ch = SocketChannel.open();
                ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
                // Blocking, and short: the peer listens already (it published its address).
                ch.socket().connect(to, CONNECT_MILLIS);
                if (secret.isPresent()) {
                    try {
                        Handshake.asClient(ch.socket(), secret.get(), PURPOSE, Duration.ofMillis(HELLO_MILLIS));
                    } catch (AuthenticationException e) {
                        ch.close();
                        fail(new CollectiveException(who + ": the address rank " + names.rank(j) + " published for "
                                + "messages (" + to + ") failed authentication: " + e.getMessage()));
                        return;
                    }
                }
                peerHello.send(ch, rank);
                ch.configureBlocking(false);
                attach(ch, ch.register(selector, SelectionKey.OP_READ));
            } catch (IOException e) {
                fail(new CollectiveException(
                        who + ": cannot connect to rank " + names.rank(j) + " at " + to + ": " + e, e));
            }
        }

        /** From now on {@code ch} (registered as {@code k}) carries this pair's messages. */
        void attach(SocketChannel ch, SelectionKey k) {
            synchronized (this) {
                channel = ch;
            }
            key = k;
            k.attach(this);
            interest();
        }

        void send(Outgoing o) {
            if (lost != null) {
                o.work().fail(lost);
                return;
            }
            sends.add(o);
            interest();
        }

        void receive(Incoming in) {
            int tag = in.call().tag();
            ArrayDeque<ByteBuffer> waiting = early.get(tag);
            if (waiting != null && !waiting.isEmpty()) {
                deliver(in, waiting.poll().flip());
                return;
            }
            if (lost != null) {
                in.work().fail(lost);
                return;
            }
            receives.computeIfAbsent(tag, t -> new ArrayDeque<>()).add(in);
        }

        /** Copies a message that came early into {@code in}'s buffer. */
        private void deliver(Incoming in, ByteBuffer message) {
            DenseBuffer target = in.call().input();
            if (message.remaining() != target.byteSize()) {
                in.work().fail(sizes(in.call(), message.remaining()));
                return;
            }
            target.copyFrom(DenseBuffer.of(message.order(ByteOrder.nativeOrder()), target.dataType()));
            in.work().complete();
        }

        private CollectiveException sizes(Collective call, long bytes) {
            return new CollectiveException(
                    who + ": " + call.describe() + ": rank " + names.rank(j) + " sent " + bytes
                            + " bytes with tag " + call.tag() + " but this receive's buffer holds "
                            + call.input().byteSize()
                            + " (" + call.input().describe() + ")",
                    null,
                    rank,
                    call,
                    List.of(j));
        }

        private void interest() {
            if (key != null && key.isValid()) {
                key.interestOps(
                        SelectionKey.OP_READ | (sends.isEmpty() && writing[1] == null ? 0 : SelectionKey.OP_WRITE));
            }
        }

        @Override
        public void ready(SelectionKey k) throws IOException {
            try {
                if (k.isReadable()) {
                    read();
                }
                if (k.isValid() && k.isWritable()) {
                    write();
                }
                interest();
            } catch (IOException e) {
                lost(e);
            }
        }

        private void write() throws IOException {
            while (true) {
                if (writing[1] == null) {
                    Outgoing next = sends.peek();
                    while (next != null && next.work().isDone()) { // timed out before it went
                        sends.poll();
                        next = sends.peek();
                    }
                    if (next == null) {
                        return;
                    }
                    writing[0] = ByteBuffer.allocate(HEADER_BYTES)
                            .order(ByteOrder.BIG_ENDIAN)
                            .putInt(next.call().tag())
                            .putInt(0)
                            .putLong(next.payload().remaining())
                            .flip();
                    writing[1] = next.payload();
                }
                channel.write(writing);
                if (writing[1].hasRemaining() || writing[0].hasRemaining()) {
                    return;
                }
                writing[0] = null;
                writing[1] = null;
                sends.poll().work().complete();
            }
        }

        private void read() throws IOException {
            while (true) {
                if (body == null) {
                    if (channel.read(header) < 0) {
                        lost(null);
                        return;
                    }
                    if (header.hasRemaining()) {
                        return;
                    }
                    begin(header.getInt(0), header.getLong(8));
                    header.clear();
                }
                if (body.hasRemaining() && channel.read(body) < 0) {
                    lost(null);
                    return;
                }
                if (body.hasRemaining()) {
                    return;
                }
                finish();
            }
        }

        /** A message of {@code bytes} with {@code tag} begins: into the first live receive for it, or kept. */
        private void begin(int tag, long bytes) {
            bodyTag = tag;
            bodyFor = null;
            copyInto = null;
            Incoming in = nextLive(tag);
            if (in != null && in.call().input().byteSize() != bytes) {
                in.work().fail(sizes(in.call(), bytes));
                in = null;
                keepBody = false; // read and dropped
            } else {
                keepBody = in == null;
            }
            bodyFor = in;
            if (in != null) {
                DenseBuffer target = in.call().input();
                java.util.Optional<ByteBuffer> direct = target.isDirect() ? target.bytes() : java.util.Optional.empty();
                if (direct.isPresent()) {
                    body = direct.get();
                } else {
                    body = ByteBuffer.allocate(Math.toIntExact(bytes));
                    copyInto = target;
                }
            } else {
                body = ByteBuffer.allocate(Math.toIntExact(bytes));
            }
        }

        /** The oldest receive posted for {@code tag} that has not timed out, taken from the queue; or null. */
        private Incoming nextLive(int tag) {
            ArrayDeque<Incoming> posted = receives.get(tag);
            while (posted != null && !posted.isEmpty()) {
                Incoming in = posted.poll();
                if (!in.work().isDone()) {
                    return in;
                }
            }
            return null;
        }

        private void finish() {
            ByteBuffer done = body;
            body = null;
            if (bodyFor != null) {
                if (copyInto != null) {
                    copyInto.copyFrom(DenseBuffer.of(done.flip().order(ByteOrder.nativeOrder()), copyInto.dataType()));
                }
                bodyFor.work().complete();
            } else if (keepBody) {
                // A receive may have been posted while the message arrived.
                Incoming in = nextLive(bodyTag);
                if (in != null) {
                    deliver(in, done.flip());
                } else {
                    early.computeIfAbsent(bodyTag, t -> new ArrayDeque<>()).add(done);
                }
            }
        }

        private void lost(IOException e) {
            fail(new CollectiveException(
                    who + ": lost rank " + names.rank(j) + ": its connection closed"
                            + (e == null ? "" : " (" + e.getMessage() + ")")
                            + " (the process is gone or closed the group)",
                    e,
                    rank,
                    null,
                    List.of(j)));
        }

        void fail(CollectiveException cause) {
            lost = cause;
            if (key != null) {
                key.cancel();
            }
            if (channel != null) {
                try {
                    channel.close();
                } catch (IOException ignored) {
                    // failing anyway
                }
            }
            for (Outgoing o : sends) {
                o.work().fail(cause);
            }
            sends.clear();
            for (ArrayDeque<Incoming> q : receives.values()) {
                for (Incoming in : q) {
                    in.work().fail(cause);
                }
            }
            receives.clear();
            if (bodyFor != null) {
                bodyFor.work().fail(cause);
                bodyFor = null;
            }
        }
    }

    /** The bytes to send: a direct buffer's own (no copy), else a copy. */
    private static ByteBuffer bytesOf(DenseBuffer data) {
        if (data.isDirect() && data.bytes().isPresent()) {
            return data.bytes().get();
        }
        ByteBuffer copy = ByteBuffer.allocate(Math.toIntExact(data.byteSize())).order(ByteOrder.nativeOrder());
        DenseBuffer.of(copy, data.dataType()).copyFrom(data);
        return copy.clear();
    }

    /** Fails what is pending and closes every connection. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        selector.wakeup();
        try {
            loop.join(2_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        CollectiveException cause = new CollectiveException(who + ": the group closed");
        failAll(cause);
        // The loop has stopped: connections that never said which rank dialed are ours to close.
        for (Hello h : List.copyOf(hellos)) {
            try {
                h.ch.close();
            } catch (IOException ignored) {
                // closing anyway
            }
        }
        hellos.clear();
        directory.withdraw(rank);
        try {
            server.close();
            selector.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }
}
