package dev.cohort.tcp.transport;

import dev.cohort.api.collective.JoinException;
import dev.cohort.runtime.Daemons;
import dev.cohort.runtime.auth.AuthenticationException;
import dev.cohort.runtime.auth.Handshake;
import dev.cohort.runtime.auth.JobSecret;
import dev.cohort.runtime.auth.PeerHello;
import dev.cohort.runtime.auth.Refusals;
import dev.cohort.runtime.store.Store;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Connects the ranks of a group into a {@link PeerMesh}: each rank listens on an ephemeral port
 * of the given address, publishes it in the group's store, connects to every lower rank and
 * accepts every higher one. With a job secret a connection first passes the {@link Handshake};
 * then it opens with a {@link PeerHello}, and anything else is closed, logged and ignored.
 * Without a secret the hello only keeps out strangers that do not speak the protocol. The
 * listening socket is closed as soon as the mesh is complete.
 */
public final class MeshConnector {

    private static final long MAGIC = 0x436f686f72745347L; // "CohortSG"
    /** What both ends name in the {@link Handshake}. */
    private static final String PURPOSE = "cohort peer mesh";

    private static final long HELLO_MILLIS = 5_000;

    private MeshConnector() {}

    /**
     * Connects rank {@code spec.rank()} to every other rank of the group, listening on {@code
     * address}; the addresses meet in {@code store} under each rank's number. Fails with a {@link
     * JoinException} after {@code spec.timeout()}.
     */
    public static PeerMesh connect(Store store, InetAddress address, MeshSpec spec) {
        ServerSocketChannel server;
        try {
            server = listen(address, spec.size());
            store.set(Integer.toString(spec.rank()), addressOf(server));
        } catch (IOException | RuntimeException e) {
            throw new JoinException(spec.who() + ": could not listen for the peer mesh on " + address + ": " + e, e);
        }
        return connect(server, store, spec);
    }

    /** A server socket for {@link #connect(ServerSocketChannel, Store, MeshSpec)}, on {@code address}. */
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
     * As {@link #connect(Store, InetAddress, MeshSpec)},
     * with this rank listening on {@code server} already and its address ({@link #addressOf}) in
     * {@code store} or about to be: for groups whose ranks exchange addresses some other way.
     * Closes {@code server}.
     */
    public static PeerMesh connect(ServerSocketChannel server, Store store, MeshSpec spec) {
        int rank = spec.rank();
        int size = spec.size();
        String who = spec.who();
        Optional<JobSecret> secret = spec.secret();
        PeerHello hello = new PeerHello(MAGIC, size);
        long deadline = System.nanoTime() + spec.timeout().toNanos();
        SocketChannel[] peers = new SocketChannel[size];
        try (server) {
            for (int j = 0; j < rank; j++) {
                peers[j] = dial(store, j, rank, hello, deadline, who, secret);
            }
            accept(server, peers, rank, hello, deadline, who, secret);
            return new PeerMesh(rank, size, spec.headerWords(), peers, spec.spin(), spec.names());
        } catch (IOException | RuntimeException e) {
            for (SocketChannel p : peers) {
                PeerMesh.closeQuietly(p);
            }
            if (e instanceof JoinException g) {
                throw g;
            }
            throw new JoinException(who + ": could not connect the peer mesh within " + spec.timeout() + ": " + e, e);
        }
    }

    private static SocketChannel dial(
            Store store, int peer, int rank, PeerHello hello, long deadline, String who, Optional<JobSecret> secret)
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
            hello.send(ch, rank);
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
            PeerHello hello,
            long deadline,
            String who,
            Optional<JobSecret> secret)
            throws IOException {
        int size = hello.size();
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
                    PeerMesh.closeQuietly(ch);
                    continue;
                }
                Daemons.start("cohort-mesh-hello", () -> arrivals.arrived(ch, introduce(ch, hello, deadline, secret)));
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
                    PeerMesh.closeQuietly(a.channel());
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
    private static Arrival introduce(SocketChannel ch, PeerHello hello, long deadline, Optional<JobSecret> secret) {
        long helloMillis = Math.max(1, Math.min(HELLO_MILLIS, remainingMillis(deadline)));
        if (secret.isPresent()) {
            try {
                Handshake.asServer(ch.socket(), secret.get(), PURPOSE, Duration.ofMillis(helloMillis));
            } catch (AuthenticationException | IOException e) {
                return new Arrival(ch, -1, e.getMessage());
            }
        }
        int peer = readHello(ch, hello, helloMillis);
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
                PeerMesh.closeQuietly(ch); // the mesh no longer waits for anyone
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
                PeerMesh.closeQuietly(a.channel());
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
    private static int readHello(SocketChannel ch, PeerHello hello, long timeoutMillis) {
        try {
            ch.socket().setSoTimeout((int) Math.max(1, timeoutMillis));
            byte[] said = ch.socket().getInputStream().readNBytes(PeerHello.BYTES);
            int r = hello.rankIn(ByteBuffer.wrap(said));
            ch.socket().setSoTimeout(0);
            return r;
        } catch (IOException e) {
            return -1;
        }
    }

    private static long remainingMillis(long deadline) {
        return Math.max(1, (deadline - System.nanoTime()) / 1_000_000);
    }
}
