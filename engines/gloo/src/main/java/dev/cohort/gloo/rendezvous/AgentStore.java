package dev.cohort.gloo.rendezvous;

import dev.cohort.gloo.GlooConnectException;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * A client of the TCP store a launcher's agent hosts (torchrun's, {@code TORCHELASTIC_USE_AGENT_STORE}),
 * through which the ranks learn where rank 0 hosts the job's own store: rank 0 posts its address, the
 * others wait for it. The job's own store is a c10d store of libtorch's version; the agent's is
 * that of the PyTorch running torchrun, whose wire protocol differs between versions, so this client
 * speaks c10d's protocol itself, in either dialect, and only for that one key.
 *
 * <p>The dialects: PyTorch 1.x numbers its queries SET 0, GET 2, WAIT 5, GETNUMKEYS 6; 2.x opens
 * each connection with VALIDATE (0, and a magic number) and numbers SET 1, GET 3, WAIT 6. A
 * connection first asks the 1.x question GETNUMKEYS, which a 1.x store answers at once; a 2.x
 * store rejects it or waits for more, and the client reconnects in 2.x's dialect. Strings and byte
 * vectors travel as a 64-bit little-endian length and the bytes. Keys are raw: c10d's own clients
 * put "/" before each key they are given, so they name this client's key without its first "/".
 */
final class AgentStore implements AutoCloseable {

    private static final Duration PROBE = Duration.ofSeconds(2);
    private static final int V2_MAGIC = 0x3C85F7CE;

    private enum Dialect {
        V1(0, 2, 5),
        V2(1, 3, 6);

        final int set;
        final int get;
        final int waitQuery;

        Dialect(int set, int get, int waitQuery) {
            this.set = set;
            this.get = get;
            this.waitQuery = waitQuery;
        }
    }

    private final Socket socket;
    private final Dialect dialect;
    private final DataInputStream in;
    private final OutputStream out;
    private final String where;

    private AgentStore(Socket socket, Dialect dialect, String where) throws IOException {
        this.socket = socket;
        this.dialect = dialect;
        this.in = new DataInputStream(socket.getInputStream());
        this.out = socket.getOutputStream();
        this.where = where;
    }

    /** Connects to the agent's store at {@code host:port}, learning its dialect; waits at most {@code timeout}. */
    static AgentStore connect(String host, int port, Duration timeout) {
        String where = "launcher's TCP store at " + host + ":" + port;
        long deadline = System.nanoTime() + timeout.toNanos();
        IOException last = null;
        while (System.nanoTime() - deadline < 0) {
            try {
                Socket probe = open(host, port, timeout);
                if (speaksV1(probe)) {
                    probe.setSoTimeout(0);
                    return new AgentStore(probe, Dialect.V1, where);
                }
                probe.close();
                Socket socket = open(host, port, timeout);
                AgentStore store = new AgentStore(socket, Dialect.V2, where);
                ByteBuffer hello = ByteBuffer.allocate(5)
                        .order(ByteOrder.LITTLE_ENDIAN)
                        .put((byte) 0)
                        .putInt(V2_MAGIC);
                store.out.write(hello.array());
                store.out.flush();
                return store;
            } catch (IOException e) {
                last = e;
                sleepQuietly(200);
            }
        }
        throw new GlooConnectException(
                "could not reach the " + where + " within " + timeout
                        + " (is torchrun's agent running, and MASTER_ADDR/MASTER_PORT its store?): " + last,
                last);
    }

    private static Socket open(String host, int port, Duration timeout) throws IOException {
        Socket socket = new Socket();
        socket.setTcpNoDelay(true);
        socket.connect(new InetSocketAddress(host, port), (int) Math.min(Integer.MAX_VALUE, timeout.toMillis()));
        return socket;
    }

    /** Asks 1.x's GETNUMKEYS: a 1.x store answers with 8 bytes at once, a 2.x store does not. */
    private static boolean speaksV1(Socket socket) throws IOException {
        socket.setSoTimeout((int) PROBE.toMillis());
        socket.getOutputStream().write(6);
        socket.getOutputStream().flush();
        try {
            new DataInputStream(socket.getInputStream()).readFully(new byte[8]);
            return true;
        } catch (SocketTimeoutException | EOFException e) {
            return false;
        } catch (IOException e) {
            return false; // reset by a store that rejects the question
        }
    }

    /** This side's address on the connection: one at which the store's host, and so the other ranks, reach this host. */
    InetAddress localAddress() {
        return socket.getLocalAddress();
    }

    void set(String key, String value) {
        try {
            out.write(dialect.set);
            writeBytes(key.getBytes(StandardCharsets.UTF_8));
            writeBytes(value.getBytes(StandardCharsets.UTF_8));
            out.flush();
        } catch (IOException e) {
            throw failed("set " + key, e);
        }
    }

    /** Waits until {@code key} is set (at most {@code timeout}), then reads it. */
    String get(String key, Duration timeout) {
        try {
            socket.setSoTimeout((int) Math.min(Integer.MAX_VALUE, Math.max(1, timeout.toMillis())));
            out.write(dialect.waitQuery);
            writeLong(1);
            writeBytes(key.getBytes(StandardCharsets.UTF_8));
            out.flush();
            int response = in.read();
            if (response != 0) {
                throw new IOException("unexpected answer " + response + " to WAIT");
            }
            out.write(dialect.get);
            writeBytes(key.getBytes(StandardCharsets.UTF_8));
            out.flush();
            long length = Long.reverseBytes(in.readLong());
            if (length < 0 || length > 4096) {
                throw new IOException("a value of " + length + " bytes");
            }
            byte[] value = new byte[(int) length];
            in.readFully(value);
            return new String(value, StandardCharsets.UTF_8);
        } catch (SocketTimeoutException e) {
            throw new GlooConnectException(
                    "rank 0 did not post its store's address in the " + where + " within " + timeout + " (key " + key
                            + "): is rank 0 running?",
                    e);
        } catch (IOException e) {
            throw failed("get " + key, e);
        }
    }

    private void writeBytes(byte[] bytes) throws IOException {
        writeLong(bytes.length);
        out.write(bytes);
    }

    private void writeLong(long v) throws IOException {
        out.write(
                ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(v).array());
    }

    private GlooConnectException failed(String what, IOException e) {
        return new GlooConnectException(
                "the " + where + " failed (" + what + ", c10d protocol " + dialect + "): " + e, e);
    }

    private static void sleepQuietly(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new GlooConnectException("interrupted while reaching the launcher's store");
        }
    }

    @Override
    public void close() {
        try {
            socket.close();
        } catch (IOException ignored) {
            // closing: nothing to tell
        }
    }
}
