package dev.cohort.gloo.rendezvous;

import dev.cohort.runtime.Daemons;
import dev.cohort.gloo.GlooConnectException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
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
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The public face of rank 0's TCP store: listens on {@code MASTER_ADDR:MASTER_PORT} and forwards
 * to the real store on a loopback port only the connections that open with c10d's handshake.
 *
 * <p>Why: c10d's store server stops serving its own ranks after a stream of connections that
 * connect and hang up or send junk (measured: both ranks stuck in the store's constructor past its
 * 60 s timeout), and it listens on every interface. The guard listens on the address asked for,
 * reads the first {@value #HANDSHAKE_BYTES} bytes of each connection within
 * {@value #HANDSHAKE_MILLIS} ms, and drops anything that is not c10d's {@code VALIDATE} query with
 * its magic number. One selector thread reads the handshakes, so a flood of silent connections
 * costs a descriptor each and no thread; beyond {@value #MAX_PENDING} waiting, the oldest is closed.
 * The ranks' clients send the handshake at once, so they are never the oldest (this matters: c10d's
 * client backs off for up to a minute after a refused attempt). Validated connections are copied
 * both ways by a pair of threads. A client that speaks c10d's protocol is trusted as c10d trusts
 * it (see docs/SECURITY.md).
 */
final class StoreGuard implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger(StoreGuard.class.getName());

    /** c10d's first message: query type VALIDATE (0) and the magic number 0x3C85F7CE, little-endian. */
    private static final byte[] HANDSHAKE = {0x00, (byte) 0xce, (byte) 0xf7, (byte) 0x85, 0x3c};
    private static final int HANDSHAKE_BYTES = 5;
    private static final long HANDSHAKE_MILLIS = 5_000;
    private static final int MAX_PENDING = 1024;
    private static final int REJECTIONS_REPORTED = 3;

    /** A connection waiting for its handshake. */
    private record Pending(SocketChannel channel, ByteBuffer received, long acceptedAt) {
    }

    private final ServerSocketChannel server;
    private final Selector selector;
    private final InetSocketAddress store;
    private final ArrayDeque<Pending> pending = new ArrayDeque<>();
    private final Set<Socket> forwarded = ConcurrentHashMap.newKeySet();
    private final AtomicInteger rejected = new AtomicInteger();
    /** c10d clients whose handshake was valid and whose connection has not ended yet. */
    private final AtomicInteger clients = new AtomicInteger();
    private final String who;
    private volatile boolean closed;

    private StoreGuard(ServerSocketChannel server, Selector selector, InetSocketAddress store, String who) {
        this.server = server;
        this.selector = selector;
        this.store = store;
        this.who = who;
    }

    /**
     * Listens on {@code host:port} and forwards to {@code store}.
     *
     * @throws GlooConnectException when the port is taken or {@code host} is not an address of this host
     */
    /** The port it listens on (the one asked for, or the one the system chose for port 0). */
    int port() {
        try {
            return ((InetSocketAddress) server.getLocalAddress()).getPort();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    static StoreGuard open(InetAddress host, int port, InetSocketAddress store, String who) {
        ServerSocketChannel server = null;
        try {
            server = ServerSocketChannel.open();
            server.bind(new InetSocketAddress(host, port), 512);
            server.configureBlocking(false);
            Selector selector = Selector.open();
            server.register(selector, SelectionKey.OP_ACCEPT);
            StoreGuard guard = new StoreGuard(server, selector, store, who);
            Daemons.start("cohort-store-guard", guard::run);
            return guard;
        } catch (IOException e) {
            closeQuietly(server);
            String why = e instanceof BindException
                    ? " (is MASTER_PORT taken by another job, or MASTER_ADDR not an address of rank 0's host? "
                    + "pick a free MASTER_PORT)" : "";
            throw new GlooConnectException(who + ": cannot host the TCP store on " + host.getHostAddress() + ":" + port
                    + ": " + e.getMessage() + why, e);
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
                    selector.selectNow();              // deregisters the cancelled keys: blocking mode is allowed again
                    for (SocketChannel ch : validated) {
                        ch.configureBlocking(true);
                        Daemons.start("cohort-store-guard-conn", () -> forward(ch));
                    }
                    validated.clear();
                }
                expire(System.nanoTime());
            }
        } catch (IOException | RuntimeException e) {
            if (!closed) {
                LOG.log(System.Logger.Level.WARNING, who + ": the store guard stopped: " + e, e);
            }
        }
    }

    private void acceptAll() throws IOException {
        SocketChannel ch;
        while ((ch = server.accept()) != null) {
            ch.configureBlocking(false);
            Pending p = new Pending(ch, ByteBuffer.allocate(HANDSHAKE_BYTES), System.nanoTime());
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
            reject(p, "no handshake");
        } else if (!p.received().hasRemaining()) {
            pending.remove(p);
            key.cancel();
            if (Arrays.equals(p.received().array(), HANDSHAKE)) {
                clients.incrementAndGet();
                validated.add(p.channel());
            } else {
                reject(p, "not a c10d store client");
            }
        }
    }

    private void expire(long now) {
        while (!pending.isEmpty() && now - pending.peek().acceptedAt() > HANDSHAKE_MILLIS * 1_000_000) {
            reject(pending.poll(), "no handshake within " + HANDSHAKE_MILLIS + " ms");
        }
    }

    /** Replays the handshake to the store, then copies bytes both ways until either side ends. */
    private void forward(SocketChannel channel) {
        Socket client = null;
        Socket upstream = new Socket();
        try {
            client = channel.socket();
            forwarded.add(client);
            forwarded.add(upstream);
            client.setTcpNoDelay(true);
            upstream.connect(store, (int) HANDSHAKE_MILLIS);
            upstream.setTcpNoDelay(true);
            upstream.getOutputStream().write(HANDSHAKE);
            Socket from = client;
            Thread back = Daemons.thread("cohort-store-guard-back", () -> pump(upstream, from));
            back.start();
            pump(client, upstream);
            back.join();
        } catch (IOException e) {
            // the client went away or the store closed: end this connection
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            closeForwarded(client);
            closeForwarded(upstream);
            clients.decrementAndGet();
        }
    }

    /** How many store clients of other processes are connected through the guard now. */
    int connectedClients() {
        return clients.get();
    }

    private void pump(Socket from, Socket to) {
        byte[] buffer = new byte[16 * 1024];
        try {
            InputStream in = from.getInputStream();
            OutputStream out = to.getOutputStream();
            int n;
            while ((n = in.read(buffer)) >= 0) {
                out.write(buffer, 0, n);
            }
        } catch (IOException e) {
            // one side ended
        } finally {
            closeForwarded(from);
            closeForwarded(to);
        }
    }

    private void reject(Pending p, String why) {
        pending.remove(p);
        int n = rejected.incrementAndGet();
        if (n <= REJECTIONS_REPORTED) {
            String from;
            try {
                from = String.valueOf(p.channel().getRemoteAddress());
            } catch (IOException e) {
                from = "?";
            }
            LOG.log(System.Logger.Level.WARNING, who + ": store guard dropped a connection from " + from
                    + " (" + why + ")" + (n == REJECTIONS_REPORTED ? "; further drops are counted silently" : ""));
        }
        closeQuietly(p.channel());
    }

    private void closeForwarded(Socket s) {
        if (s == null) {
            return;
        }
        forwarded.remove(s);
        try {
            s.close();
        } catch (IOException ignored) {
            // closing anyway
        }
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
        for (Socket s : forwarded) {
            closeForwarded(s);
        }
    }

    @Override
    public String toString() {
        return "store guard on " + server.socket().getLocalSocketAddress() + " -> " + store;
    }
}
