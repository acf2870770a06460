package dev.cohort.gloo.rendezvous;

import dev.cohort.gloo.GlooConnectException;
import dev.cohort.runtime.Daemons;
import dev.cohort.runtime.auth.AuthenticationException;
import dev.cohort.runtime.auth.Handshake;
import dev.cohort.runtime.auth.JobSecret;
import dev.cohort.runtime.auth.Refusals;
import dev.cohort.runtime.store.Acceptor;
import dev.cohort.runtime.store.OpenSockets;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;

/**
 * A rank's way to the job's c10d store when the job has a secret: c10d's client (which cannot
 * authenticate) connects to this relay on a loopback port; the relay proves the secret to rank 0's
 * {@link StoreGuard} and then copies bytes both ways. It serves only connections this process
 * opened (told by {@code /proc}: {@link LocalSockets#openedHere}), so another process on the host
 * cannot use it to reach the store.
 */
final class StoreRelay implements AutoCloseable {

    private static final int CONNECT_MILLIS = 5_000;
    private static final Duration HANDSHAKE = Duration.ofSeconds(10);

    private final ServerSocket server;
    private final InetSocketAddress guard;
    private final JobSecret secret;
    private final String who;
    private final Refusals refusals;
    private final Duration patience;
    private final OpenSockets open = new OpenSockets();
    private volatile String failure;
    private volatile boolean closed;

    private StoreRelay(ServerSocket server, InetSocketAddress guard, JobSecret secret, Duration patience, String who) {
        this.server = server;
        this.guard = guard;
        this.secret = secret;
        this.patience = patience;
        this.who = who;
        this.refusals = new Refusals(who + ": store relay on " + server.getLocalSocketAddress());
    }

    /**
     * Relays to the guard at {@code host:port}, waiting up to {@code patience} for it to listen (rank
     * 0 may start later than this rank).
     */
    static StoreRelay open(String host, int port, JobSecret secret, Duration patience, String who) {
        try {
            ServerSocket s = new ServerSocket(0, 64, InetAddress.getLoopbackAddress());
            StoreRelay relay = new StoreRelay(s, new InetSocketAddress(host, port), secret, patience, who);
            Acceptor.start("cohort-store-relay", s, relay::accepted);
            return relay;
        } catch (IOException e) {
            throw new GlooConnectException(who + ": cannot open a loopback port to relay to the job's store: " + e, e);
        }
    }

    /** The loopback port c10d's client connects to. */
    int port() {
        return server.getLocalPort();
    }

    /** A connection to the relay: served when it is this process's own (c10d's client), else refused. */
    private void accepted(Socket s) {
        if (!LocalSockets.openedHere(s.getPort(), server.getLocalPort())) {
            refusals.refused(s.getRemoteSocketAddress(), "not a connection of this process");
            closeQuietly(s);
            return;
        }
        open.add(s);
        Daemons.start("cohort-store-relay-conn", () -> relay(s));
    }

    /** Why the store could not be reached through this relay, or null. */
    String failure() {
        return failure;
    }

    private void relay(Socket local) {
        Socket upstream = null;
        try {
            local.setTcpNoDelay(true);
            upstream = reachGuard();
            if (upstream == null) {
                return;
            }
            try {
                Handshake.asClient(upstream, secret, StoreGuard.PURPOSE, HANDSHAKE);
            } catch (AuthenticationException e) {
                failure = "the job's store at " + guard + " failed authentication: " + e.getMessage()
                        + "; every rank needs the same " + JobSecret.ENV + " or " + JobSecret.FILE_ENV;
                System.getLogger(StoreRelay.class.getName()).log(System.Logger.Level.ERROR, who + ": " + failure);
                return;
            }
            SocketPipe.join(local, upstream, "cohort-store-relay-back");
        } catch (IOException e) {
            failure = "lost the connection to the job's store at " + guard + ": " + e.getMessage();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            closeQuietly(local);
            if (upstream != null) {
                closeQuietly(upstream);
            }
        }
    }

    /** A connection to the guard, tried again until {@code patience} has passed; null then. */
    private Socket reachGuard() throws InterruptedException {
        long deadline = System.nanoTime() + patience.toNanos();
        IOException last = null;
        while (!closed && System.nanoTime() < deadline) {
            Socket s = new Socket();
            try {
                s.setTcpNoDelay(true);
                s.connect(guard, CONNECT_MILLIS);
                open.add(s);
                return s;
            } catch (IOException e) {
                last = e;
                closeQuietly(s);
                Thread.sleep(100);
            }
        }
        failure = "nothing answered at " + guard + " within " + patience
                + (last == null ? "" : " (" + last.getMessage() + ")");
        return null;
    }

    private void closeQuietly(Socket s) {
        open.close(s);
    }

    @Override
    public void close() {
        closed = true;
        open.closeAll(server);
    }
}
