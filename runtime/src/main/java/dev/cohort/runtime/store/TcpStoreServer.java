package dev.cohort.runtime.store;

import dev.cohort.runtime.Daemons;
import dev.cohort.runtime.auth.AuthenticationException;
import dev.cohort.runtime.auth.Handshake;
import dev.cohort.runtime.auth.JobSecret;
import dev.cohort.runtime.auth.Refusals;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * A {@link Store} served over TCP to {@link TcpStore} clients, as c10d's {@code TCPStore} server
 * is: one rank hosts it for the job, every rank (the host too) connects. Each connection is
 * served by a daemon thread of its own; a client that does not open with the store's hello (with
 * a {@link JobSecret}: that does not first pass the {@link Handshake}) is dropped. The values live
 * in an {@link InMemoryStore}, for as long as the server runs.
 */
public final class TcpStoreServer implements AutoCloseable {

    /** Opens every connection: "CohortKV" and the protocol's version. */
    static final long HELLO = 0x436f686f72744b56L;

    static final int VERSION = 1;
    static final byte SET = 1;
    static final byte GET = 2;
    static final byte ADD = 3;
    static final byte CHECK = 4;
    static final byte WAIT = 5;
    static final byte OK = 0;
    static final byte MISSING = 1;
    static final byte TIMEOUT = 2;
    static final byte ERROR = 3;
    /** What both ends name in the {@link Handshake}. */
    static final String PURPOSE = "cohort job store";

    static final Duration HANDSHAKE_TIMEOUT = Duration.ofSeconds(10);

    private final InMemoryStore values = new InMemoryStore();
    private final ServerSocket server;
    private final OpenSockets clients = new OpenSockets();
    private final Optional<JobSecret> secret;
    private final Refusals refusals;
    private volatile boolean closed;

    private TcpStoreServer(ServerSocket server, Optional<JobSecret> secret) {
        this.server = server;
        this.secret = secret;
        this.refusals = new Refusals("job store on " + server.getLocalSocketAddress());
        Acceptor.start("cohort-store-accept-" + server.getLocalPort(), server, s -> {
            clients.add(s);
            Daemons.start("cohort-store-client", () -> serve(s));
        });
    }

    /**
     * Serves a store on {@code host:port} (port 0: a free port, see {@link #port()}); with a
     * {@code secret}, to clients that prove they know it.
     *
     * @throws UncheckedIOException naming the port when it cannot be bound (in use, not allowed, or
     *                              {@code host} not an address of this host)
     */
    public static TcpStoreServer start(InetAddress host, int port, Optional<JobSecret> secret) {
        try {
            ServerSocket s = new ServerSocket();
            s.setReuseAddress(true);
            s.bind(new InetSocketAddress(host, port), 128);
            return new TcpStoreServer(s, secret);
        } catch (IOException e) {
            String hint = String.valueOf(e.getMessage()).contains("assign")
                    ? "is MASTER_ADDR an address of rank 0's host?"
                    : "is another job or an earlier run of this one still using it? Choose another MASTER_PORT";
            throw new UncheckedIOException(
                    "cannot serve the job's store on " + host.getHostAddress() + ":" + port + " (" + e.getMessage()
                            + "); " + hint,
                    e);
        }
    }

    /** The port the store is served on. */
    public int port() {
        return server.getLocalPort();
    }

    private void serve(Socket s) {
        try (s) {
            s.setTcpNoDelay(true);
            if (secret.isPresent()) {
                try {
                    Handshake.asServer(s, secret.get(), PURPOSE, HANDSHAKE_TIMEOUT);
                } catch (AuthenticationException e) {
                    refusals.refused(s.getRemoteSocketAddress(), e.getMessage());
                    return;
                }
            }
            s.setSoTimeout(10_000); // the hello comes at once, or never
            DataInputStream in = new DataInputStream(new java.io.BufferedInputStream(s.getInputStream()));
            DataOutputStream out = new DataOutputStream(new java.io.BufferedOutputStream(s.getOutputStream()));
            if (in.readLong() != HELLO || in.readInt() != VERSION) {
                refusals.refused(s.getRemoteSocketAddress(), "not a client of the job store");
                return;
            }
            out.writeLong(HELLO);
            out.flush();
            s.setSoTimeout(0); // clients are idle between requests for as long as the job runs
            while (!closed) {
                byte op = in.readByte();
                switch (op) {
                    case SET -> {
                        values.set(in.readUTF(), in.readUTF());
                        out.writeByte(OK);
                    }
                    case GET -> {
                        String key = in.readUTF();
                        if (values.check(key)) {
                            out.writeByte(OK);
                            out.writeUTF(values.get(key));
                        } else {
                            out.writeByte(MISSING);
                        }
                    }
                    case ADD -> {
                        String key = in.readUTF();
                        long delta = in.readLong();
                        try {
                            long sum = values.add(key, delta);
                            out.writeByte(OK);
                            out.writeLong(sum);
                        } catch (NumberFormatException e) {
                            out.writeByte(ERROR);
                            out.writeUTF("the value under '" + key + "' is not a number");
                        }
                    }
                    case CHECK -> {
                        out.writeByte(OK);
                        out.writeBoolean(values.check(in.readUTF()));
                    }
                    case WAIT -> {
                        int n = in.readInt();
                        List<String> keys = new ArrayList<>(n);
                        for (int i = 0; i < n; i++) {
                            keys.add(in.readUTF());
                        }
                        long millis = in.readLong();
                        try {
                            values.await(keys, System.nanoTime() + millis * 1_000_000);
                            out.writeByte(OK);
                        } catch (StoreTimeoutException e) {
                            out.writeByte(TIMEOUT);
                            out.writeUTF(e.getMessage());
                        }
                    }
                    default -> {
                        return; // not a client of this protocol
                    }
                }
                out.flush();
            }
        } catch (EOFException | SocketException e) {
            // the client went away
        } catch (IOException e) {
            // a broken client; the others are served on
        } finally {
            clients.remove(s);
        }
    }

    /** True once {@code n} clients' waits are pending here, false at {@code deadlineNanos} (for tests). */
    boolean awaitWaiting(int n, long deadlineNanos) throws InterruptedException {
        return values.awaitWaiting(n, deadlineNanos);
    }

    /** How many connections were refused (no handshake, a wrong secret, not a store client). */
    public int refused() {
        return refusals.count();
    }

    /** Stops serving: the listening socket and every client's connection close. */
    @Override
    public void close() {
        closed = true;
        clients.closeAll(server);
    }
}
