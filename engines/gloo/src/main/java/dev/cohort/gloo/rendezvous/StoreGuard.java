package dev.cohort.gloo.rendezvous;

import dev.cohort.gloo.GlooConnectException;
import dev.cohort.runtime.Daemons;
import dev.cohort.runtime.auth.AuthenticationException;
import dev.cohort.runtime.auth.Handshake;
import dev.cohort.runtime.auth.JobSecret;
import dev.cohort.runtime.auth.Refusals;
import java.io.IOException;
import java.net.BindException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The only listening socket of rank 0's TCP store: on {@code MASTER_ADDR:MASTER_PORT}, it hands to
 * the store ({@link C10dStoreServer}, in this process) only the connections that open with c10d's
 * handshake, and with a job secret only those that first pass the {@link Handshake} (the ranks'
 * {@link StoreRelay}s run its client's side for c10d's clients, rank 0's own too).
 *
 * <p>It reads the first {@value #HANDSHAKE_BYTES} bytes of each connection within
 * {@value #HANDSHAKE_MILLIS} ms and drops anything that is not c10d's {@code VALIDATE} query with its
 * magic number. One selector thread reads the handshakes, so a flood of silent connections costs a
 * descriptor each and no thread; beyond {@value #MAX_PENDING} waiting, the oldest is closed. The
 * ranks' clients send the handshake at once, so they are never the oldest (this matters: c10d's
 * client backs off for up to a minute after a refused attempt). Without a secret, a client that
 * speaks c10d's protocol is trusted as c10d trusts it (see docs/SECURITY.md).
 */
final class StoreGuard implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger(StoreGuard.class.getName());

    /** c10d's first message: query type VALIDATE (0) and the magic number 0x3C85F7CE, little-endian. */
    private static final byte[] HANDSHAKE = {0x00, (byte) 0xce, (byte) 0xf7, (byte) 0x85, 0x3c};

    private static final int HANDSHAKE_BYTES = 5;
    private static final long HANDSHAKE_MILLIS = 5_000;
    private static final int MAX_PENDING = 1024;
    /** What both ends name in the {@link Handshake}. */
    static final String PURPOSE = "cohort c10d store";

    /**
     * A connection waiting for its handshake: with a secret, first the authentication's hello, then
     * its proof, then c10d's handshake.
     */
    private static final class Pending {
        final SocketChannel channel;
        final long acceptedAt = System.nanoTime();
        final Handshake auth;
        ByteBuffer received;
        /** 0: the authentication's hello, 1: its proof, 2: c10d's handshake. */
        int phase;

        Pending(SocketChannel channel, Handshake auth) {
            this.channel = channel;
            this.auth = auth;
            this.phase = auth == null ? 2 : 0;
            this.received = ByteBuffer.allocate(auth == null ? HANDSHAKE_BYTES : Handshake.HELLO_BYTES);
        }

        SocketChannel channel() {
            return channel;
        }

        ByteBuffer received() {
            return received;
        }

        long acceptedAt() {
            return acceptedAt;
        }
    }

    private final ServerSocketChannel server;
    private final Selector selector;
    private final C10dStoreServer store;
    private final ArrayDeque<Pending> pending = new ArrayDeque<>();
    private final Optional<JobSecret> secret;
    private final Refusals refusals;
    /** c10d clients whose handshake was valid and whose connection has not ended yet. */
    private final Set<Socket> served = ConcurrentHashMap.newKeySet();

    private final String who;
    private volatile boolean closed;

    /** Watches {@code server} (non-blocking, bound) for connections on a selector of its own. */
    private StoreGuard(ServerSocketChannel server, C10dStoreServer store, String who, Optional<JobSecret> secret)
            throws IOException {
        this.server = server;
        this.selector = Selector.open();
        server.register(selector, SelectionKey.OP_ACCEPT);
        this.store = store;
        this.who = who;
        this.secret = secret;
        this.refusals = new Refusals(who + ": store guard on " + server.socket().getLocalSocketAddress());
    }

    /** The port it listens on (the one asked for, or the one the system chose for port 0). */
    int port() {
        try {
            return ((InetSocketAddress) server.getLocalAddress()).getPort();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /**
     * Listens on {@code host:port} and forwards to {@code store}.
     *
     * @throws GlooConnectException when the port is taken or {@code host} is not an address of this host
     */
    static StoreGuard open(InetAddress host, int port, C10dStoreServer store, String who, Optional<JobSecret> secret) {
        ServerSocketChannel server = null;
        try {
            server = ServerSocketChannel.open();
            server.bind(new InetSocketAddress(host, port), 512);
            server.configureBlocking(false);
            StoreGuard guard = new StoreGuard(server, store, who, secret);
            Daemons.start("cohort-store-guard", guard::run);
            return guard;
        } catch (IOException e) {
            closeQuietly(server);
            String why = e instanceof BindException
                    ? " (is MASTER_PORT taken by another job, or MASTER_ADDR not an address of rank 0's host? "
                            + "pick a free MASTER_PORT)"
                    : "";
            throw new GlooConnectException(
                    who + ": cannot host the TCP store on " + host.getHostAddress() + ":" + port + ": " + e.getMessage()
                            + why,
                    e);
        }
    }

    /** One thread: accepts, reads handshakes as they arrive, drops the silent and the wrong. */
    private void run() {
        try {
            List<SocketChannel> validated = new ArrayList<>();
            while (!closed) {
                selector.select(500);
                for (SelectionKey key : selector.selectedKeys()) {
                    if (!key.isValid()) {
                        continue;
                    }
                    if (key.isAcceptable()) {
                        acceptAll();
                    } else if (key.isReadable()) {
                        readHandshake(key, (Pending) key.attachment(), validated);
                    }
                }
                selector.selectedKeys().clear();
                if (!validated.isEmpty()) {
                    selector.selectNow(); // deregisters the cancelled keys: blocking mode is allowed again
                    for (SocketChannel ch : validated) {
                        ch.configureBlocking(true);
                        serve(ch);
                    }
                    validated.clear();
                }
                expire(System.nanoTime());
            }
        } catch (IOException | RuntimeException e) {
            if (!closed) {
                LOG.log(System.Logger.Level.WARNING, who + ": the store guard stopped: " + e, e);
            }
        } finally {
            // A channel registered with a selector is closed only once the selector lets it go.
            for (Pending p : pending) {
                closeQuietly(p.channel());
            }
            try {
                selector.close();
            } catch (IOException e) {
                // closing anyway
            }
            closeQuietly(server);
        }
    }

    private void acceptAll() throws IOException {
        SocketChannel ch;
        while ((ch = server.accept()) != null) {
            ch.configureBlocking(false);
            Pending p = new Pending(
                    ch, secret.map(k -> Handshake.server(k, PURPOSE)).orElse(null));
            ch.register(selector, SelectionKey.OP_READ, p);
            pending.add(p);
            while (pending.size() > MAX_PENDING) {
                reject(pending.poll(), "silent while " + MAX_PENDING + " newer connections waited");
            }
        }
    }

    /** Reads a pending handshake; a complete, valid one joins {@code validated} (its key cancelled). */
    private void readHandshake(SelectionKey key, Pending p, List<SocketChannel> validated) {
        int n;
        try {
            n = p.channel().read(p.received());
        } catch (IOException e) {
            n = -1;
        }
        if (n < 0) {
            reject(p, p.phase < 2 ? "closed before authenticating" : "no handshake");
            return;
        }
        try {
            if (p.phase == 0
                    && !Handshake.mayOpenHandshake(
                            p.received().array(), p.received().position())) {
                p.auth.answer(p.received().array()); // refuses, saying why
            }
            if (p.received().hasRemaining()) {
                return;
            }
            if (p.phase == 0) {
                ByteBuffer answer = ByteBuffer.wrap(p.auth.answer(p.received().array()));
                p.channel().write(answer);
                if (answer.hasRemaining()) {
                    reject(p, "does not read its handshake's answer");
                    return;
                }
                p.phase = 1;
                p.received = ByteBuffer.allocate(Handshake.PROOF_BYTES);
                return;
            }
            if (p.phase == 1) {
                p.auth.check(p.received().array());
                p.phase = 2;
                p.received = ByteBuffer.allocate(HANDSHAKE_BYTES);
                return;
            }
        } catch (AuthenticationException | IOException e) {
            reject(p, e.getMessage());
            return;
        }
        pending.remove(p);
        key.cancel();
        if (Arrays.equals(p.received().array(), HANDSHAKE)) {
            validated.add(p.channel());
        } else {
            reject(p, "not a c10d store client");
        }
    }

    private void expire(long now) {
        while (!pending.isEmpty() && now - pending.peek().acceptedAt() > HANDSHAKE_MILLIS * 1_000_000) {
            reject(pending.poll(), "no handshake within " + HANDSHAKE_MILLIS + " ms");
        }
    }

    /** Hands a validated connection to the store, which keeps it while it lasts. */
    private void serve(SocketChannel channel) {
        Socket client = channel.socket();
        served.add(client);
        store.serve(client, () -> served.remove(client));
    }

    /**
     * How many store clients of other processes are connected through the guard now (told from
     * {@code /proc} when asked: reading it for every connection as it came slowed the rendezvous).
     */
    int connectedClients() {
        int others = 0;
        for (Socket s : served) {
            if (!s.isClosed() && !LocalSockets.openedHere(s.getPort(), s.getLocalPort())) {
                others++;
            }
        }
        return others;
    }

    private void reject(Pending p, String why) {
        pending.remove(p);
        Object from;
        try {
            from = p.channel().getRemoteAddress();
        } catch (IOException e) {
            from = "?";
        }
        refusals.refused(from, why);
        closeQuietly(p.channel());
    }

    /** How many connections the guard dropped. */
    int refused() {
        return refusals.count();
    }

    private static void closeQuietly(java.nio.channels.Channel c) {
        if (c == null) {
            return;
        }
        try {
            c.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }

    @Override
    public void close() {
        closed = true;
        selector.wakeup();
        closeQuietly(server);
        store.close();
    }

    @Override
    public String toString() {
        return "store guard on " + server.socket().getLocalSocketAddress();
    }
}
