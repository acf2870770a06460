package dev.cohort.gloo.rendezvous;

import dev.cohort.runtime.Daemons;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The job's key-value store on rank 0, speaking c10d's TCP store protocol (libtorch 2.x's client)
 * in Java, so that nothing but the {@link StoreGuard} listens: it hands over each connection once
 * the job's secret (when there is one) and c10d's {@code VALIDATE} were checked, and every rank's
 * c10d client, rank 0's too, reaches it there.
 *
 * <p>The protocol: a query is its type (one byte) and its arguments; strings and byte vectors are a
 * 64-bit little-endian length and the bytes, numbers little-endian. Types: VALIDATE 0 (a 32-bit
 * magic), SET 1, COMPARE_SET 2, GET 3, ADD 4, CHECK 5, WAIT 6, GETNUMKEYS 7, DELETE_KEY 8, APPEND 9,
 * MULTI_GET 10, MULTI_SET 11, CANCEL_WAIT 12, PING 13 (a 32-bit nonce, echoed), QUEUE_PUSH 14,
 * QUEUE_POP 15, QUEUE_LEN 16, LIST_KEYS 17. A WAIT is answered (STOP_WAITING 0) once every key exists; a client
 * that gives up sends CANCEL_WAIT and is answered WAIT_CANCELED 1 (after a STOP_WAITING sent
 * meanwhile, if any). A query it does not know, or a malformed one, ends that connection (c10d's
 * own server does the same), and the first few are logged.
 */
final class C10dStoreServer implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger(C10dStoreServer.class.getName());

    /** c10d's query types, in the order of their numbers on the wire (VALIDATE is 0). */
    private enum Query {
        VALIDATE,
        SET,
        COMPARE_SET,
        GET,
        ADD,
        CHECK,
        WAIT,
        GETNUMKEYS,
        DELETE_KEY,
        APPEND,
        MULTI_GET,
        MULTI_SET,
        CANCEL_WAIT,
        PING,
        QUEUE_PUSH,
        QUEUE_POP,
        QUEUE_LEN,
        LIST_KEYS;

        private static final Query[] BY_NUMBER = values();

        /** The query numbered {@code type}, or {@code null} for a number c10d does not use. */
        static Query of(int type) {
            return type >= 0 && type < BY_NUMBER.length ? BY_NUMBER[type] : null;
        }
    }

    static final int MAGIC = 0x3C85F7CE;
    static final int STOP_WAITING = 0;
    static final int WAIT_CANCELED = 1;
    static final int READY = 0;
    static final int NOT_READY = 1;

    /** Bounds on what one query may carry (a key, a value, a list of keys). */
    static final long MAX_KEY_BYTES = 1 << 16;

    static final long MAX_VALUE_BYTES = 1L << 30;
    static final long MAX_KEYS = 1 << 20;
    private static final int LOGGED_ERRORS = 3;

    private final String who;
    private final Map<String, byte[]> values = new HashMap<>();
    private final Map<String, Deque<byte[]>> queues = new HashMap<>();
    /** Connections in a WAIT, and the keys each still waits for. */
    private final Map<Connection, Set<String>> waiting = new HashMap<>();

    private final Set<Connection> open = ConcurrentHashMap.newKeySet();
    private int errorsLogged;
    private volatile boolean closed;

    C10dStoreServer(String who) {
        this.who = who;
    }

    /** Serves {@code socket} (validated already) on a thread of its own until either side ends it. */
    void serve(Socket socket, Runnable onEnd) {
        Connection c;
        try {
            c = new Connection(socket);
        } catch (IOException e) {
            closeQuietly(socket);
            onEnd.run();
            return;
        }
        open.add(c);
        if (closed) {
            c.close();
        }
        Daemons.start("cohort-c10d-store", () -> {
            try {
                c.run();
            } finally {
                open.remove(c);
                synchronized (this) {
                    waiting.remove(c);
                }
                c.close();
                onEnd.run();
            }
        });
    }

    @Override
    public void close() {
        closed = true;
        for (Connection c : open) {
            c.close();
        }
    }

    private synchronized void logError(Connection c, String what) {
        if (errorsLogged++ < LOGGED_ERRORS) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    who + ": the job's store ended a connection from " + c.socket.getRemoteSocketAddress() + ": "
                            + what);
        }
    }

    // ----- the store: every method below holds the lock --------------------------------------

    private synchronized void set(String key, byte[] value) throws IOException {
        values.put(key, value);
        wake(key);
    }

    private synchronized byte[] compareSet(String key, byte[] expected, byte[] desired) throws IOException {
        byte[] current = values.get(key);
        if (current == null) {
            if (expected.length == 0) {
                values.put(key, desired);
                wake(key);
                return desired;
            }
            return expected; // as c10d answers: the caller sees its own expectation
        }
        if (Arrays.equals(current, expected)) {
            values.put(key, desired);
            wake(key);
            return desired;
        }
        return current;
    }

    private synchronized long add(String key, long delta) throws IOException {
        byte[] current = values.get(key);
        long sum = delta;
        if (current != null) {
            try {
                sum = Math.addExact(sum, Long.parseLong(new String(current, StandardCharsets.US_ASCII).trim()));
            } catch (NumberFormatException | ArithmeticException e) {
                throw new IOException("ADD to key '" + key + "', whose value is not a 64-bit number");
            }
        }
        values.put(key, Long.toString(sum).getBytes(StandardCharsets.US_ASCII));
        wake(key);
        return sum;
    }

    private synchronized byte[] get(String key) throws IOException {
        byte[] v = values.get(key);
        if (v == null) {
            throw new IOException("GET of key '" + key + "', which does not exist");
        }
        return v;
    }

    private synchronized boolean has(List<String> keys) {
        for (String k : keys) {
            if (!exists(k)) {
                return false;
            }
        }
        return true;
    }

    private boolean exists(String key) {
        Deque<byte[]> q = queues.get(key);
        return values.containsKey(key) || q != null && !q.isEmpty();
    }

    /** Answers STOP_WAITING now, or registers {@code c} until every key exists. */
    private synchronized void await(Connection c, List<String> keys) throws IOException {
        Set<String> missing = new HashSet<>();
        for (String k : keys) {
            if (!exists(k)) {
                missing.add(k);
            }
        }
        if (missing.isEmpty()) {
            c.reply(STOP_WAITING);
        } else {
            waiting.put(c, missing);
        }
    }

    private synchronized void cancelWait(Connection c) throws IOException {
        waiting.remove(c);
        c.reply(WAIT_CANCELED);
    }

    private synchronized long delete(String key) {
        return values.remove(key) != null ? 1 : 0;
    }

    private synchronized void append(String key, byte[] more) throws IOException {
        byte[] current = values.get(key);
        if (current == null) {
            values.put(key, more);
        } else {
            byte[] joined = Arrays.copyOf(current, current.length + more.length);
            System.arraycopy(more, 0, joined, current.length, more.length);
            values.put(key, joined);
        }
        wake(key);
    }

    private synchronized void push(String key, byte[] value) throws IOException {
        queues.computeIfAbsent(key, k -> new ArrayDeque<>()).addLast(value);
        wake(key);
    }

    private synchronized byte[] pop(String key) {
        Deque<byte[]> q = queues.get(key);
        return q == null ? null : q.pollFirst();
    }

    private synchronized long queueLength(String key) {
        Deque<byte[]> q = queues.get(key);
        return q == null ? 0 : q.size();
    }

    private synchronized long size() {
        return values.size();
    }

    private synchronized List<byte[]> keys() {
        List<byte[]> keys = new ArrayList<>();
        for (String k : values.keySet()) {
            keys.add(k.getBytes(StandardCharsets.UTF_8));
        }
        return keys;
    }

    /** Tells the connections that waited only for {@code key} (among others that exist now) to stop. */
    private void wake(String key) {
        List<Connection> done = new ArrayList<>();
        for (Map.Entry<Connection, Set<String>> e : waiting.entrySet()) {
            if (e.getValue().remove(key) && e.getValue().isEmpty()) {
                done.add(e.getKey());
            }
        }
        for (Connection c : done) {
            waiting.remove(c);
            try {
                c.reply(STOP_WAITING);
            } catch (IOException ex) {
                c.close(); // its own thread ends it
            }
        }
    }

    // ----- one client ----------------------------------------------------------------------

    private final class Connection {
        final Socket socket;
        final DataInputStream in;
        final DataOutputStream out;

        Connection(Socket socket) throws IOException {
            this.socket = socket;
            socket.setTcpNoDelay(true);
            this.in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
            this.out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream()));
        }

        void run() {
            try {
                while (true) {
                    int type = in.read();
                    if (type < 0) {
                        return;
                    }
                    query(type);
                }
            } catch (EOFException e) {
                // the client went away mid-query
            } catch (IOException e) {
                if (!closed && !socket.isClosed()) {
                    logError(this, e.getMessage());
                }
            }
        }

        private void query(int type) throws IOException {
            Query query = Query.of(type);
            if (query == null) {
                throw new IOException(
                        "unknown query type " + type + " (not a c10d store client of " + "libtorch 2.x?)");
            }
            switch (query) {
                case VALIDATE -> {
                    if (readInt() != MAGIC) {
                        throw new IOException("VALIDATE with the wrong magic number");
                    }
                }
                case PING -> replyInt(readInt());
                case SET -> set(readString(), readBytes());
                case COMPARE_SET -> replyBytes(compareSet(readString(), readBytes(), readBytes()));
                case GET -> replyBytes(get(readString()));
                case ADD -> replyLong(add(readString(), readLong()));
                case CHECK -> reply(has(readKeys()) ? READY : NOT_READY);
                case WAIT -> await(this, readKeys());
                case GETNUMKEYS -> replyLong(size());
                case DELETE_KEY -> replyLong(delete(readString()));
                case APPEND -> append(readString(), readBytes());
                case MULTI_GET -> {
                    List<String> keys = readKeys();
                    List<byte[]> found = new ArrayList<>();
                    for (String k : keys) {
                        found.add(get(k));
                    }
                    synchronized (this) {
                        for (byte[] v : found) {
                            writeBytes(v);
                        }
                        out.flush();
                    }
                }
                case MULTI_SET -> {
                    long n = count(readLong());
                    for (long i = 0; i < n; i++) {
                        set(readString(), readBytes());
                    }
                }
                case CANCEL_WAIT -> cancelWait(this);
                case QUEUE_PUSH -> push(readString(), readBytes());
                case QUEUE_POP -> {
                    byte[] v = pop(readString());
                    synchronized (this) {
                        out.writeLong(Long.reverseBytes(v == null ? 0 : 1));
                        if (v != null) {
                            writeBytes(v);
                        }
                        out.flush();
                    }
                }
                case QUEUE_LEN -> replyLong(queueLength(readString()));
                case LIST_KEYS -> {
                    List<byte[]> keys = keys();
                    synchronized (this) {
                        out.writeLong(Long.reverseBytes(keys.size()));
                        for (byte[] k : keys) {
                            writeBytes(k);
                        }
                        out.flush();
                    }
                }
            }
        }

        /** A one-byte response code. */
        synchronized void reply(int code) throws IOException {
            out.writeByte(code);
            out.flush();
        }

        synchronized void replyInt(int v) throws IOException {
            out.writeInt(Integer.reverseBytes(v));
            out.flush();
        }

        synchronized void replyLong(long v) throws IOException {
            out.writeLong(Long.reverseBytes(v));
            out.flush();
        }

        synchronized void replyBytes(byte[] v) throws IOException {
            writeBytes(v);
            out.flush();
        }

        private void writeBytes(byte[] v) throws IOException {
            out.writeLong(Long.reverseBytes(v.length));
            out.write(v);
        }

        private int readInt() throws IOException {
            return Integer.reverseBytes(in.readInt());
        }

        private long readLong() throws IOException {
            return Long.reverseBytes(in.readLong());
        }

        private String readString() throws IOException {
            return new String(read(MAX_KEY_BYTES, "a key"), StandardCharsets.UTF_8);
        }

        private byte[] readBytes() throws IOException {
            return read(MAX_VALUE_BYTES, "a value");
        }

        private byte[] read(long max, String what) throws IOException {
            long n = readLong();
            if (n < 0 || n > max) {
                throw new IOException(what + " of " + Long.toUnsignedString(n) + " bytes (at most " + max + ")");
            }
            byte[] b = in.readNBytes((int) n);
            if (b.length < n) {
                throw new EOFException();
            }
            return b;
        }

        private List<String> readKeys() throws IOException {
            long n = count(readLong());
            List<String> keys = new ArrayList<>((int) Math.min(n, 1024));
            for (long i = 0; i < n; i++) {
                keys.add(readString());
            }
            return keys;
        }

        private long count(long n) throws IOException {
            if (n < 0 || n > MAX_KEYS) {
                throw new IOException("a list of " + Long.toUnsignedString(n) + " keys (at most " + MAX_KEYS + ")");
            }
            return n;
        }

        void close() {
            closeQuietly(socket);
        }
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException e) {
            // closing anyway
        }
    }
}
