package dev.cohort.runtime.store;

import dev.cohort.runtime.auth.AuthenticationException;
import dev.cohort.runtime.auth.Handshake;
import dev.cohort.runtime.auth.JobSecret;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * A client of a {@link TcpStoreServer}. Every call is a request and its answer on one connection
 * (calls from several threads take turns); each has a deadline: {@link #await}'s own, and
 * {@code timeout} for the others. A store that cannot be reached or stops answering fails the
 * call with an {@link UncheckedIOException} naming the store's address.
 */
public final class TcpStore implements Store, AutoCloseable {

    /** Slack for the answer to a wait on top of the wait itself. */
    private static final int ANSWER_SLACK_MILLIS = 5_000;

    private final String address;
    private Duration timeout;
    private final Socket socket;
    private final DataInputStream in;
    private final DataOutputStream out;

    private TcpStore(String address, Duration timeout, Socket socket) throws IOException {
        this.address = address;
        this.timeout = timeout;
        this.socket = socket;
        this.in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
        this.out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream()));
    }

    /**
     * Connects to the store at {@code host:port}, trying again until {@code deadlineNanos} while
     * nobody listens there yet (the hosting rank may start later); {@code timeout} bounds each
     * later call. With a {@code secret}, both ends prove they know it first.
     *
     * @throws AuthenticationException when the store does not know the secret, or wants one
     */
    public static TcpStore connect(
            String host, int port, long deadlineNanos, Duration timeout, Optional<JobSecret> secret) {
        String address = host + ":" + port;
        IOException last = null;
        while (true) {
            long left = (deadlineNanos - System.nanoTime()) / 1_000_000;
            if (left <= 0) {
                throw new StoreTimeoutException("the job's store at " + address + " did not answer in time"
                        + (last == null ? "" : " (last: " + last.getMessage() + ")")
                        + "; is rank 0 running, and MASTER_ADDR/MASTER_PORT the same on every rank?");
            }
            Socket s = new Socket();
            try {
                s.setTcpNoDelay(true);
                s.connect(new InetSocketAddress(host, port), (int) Math.min(left, 5_000));
                s.setSoTimeout((int) Math.min(left, 10_000));
                if (secret.isPresent()) {
                    try {
                        Handshake.asClient(s, secret.get(), TcpStoreServer.PURPOSE, TcpStoreServer.HANDSHAKE_TIMEOUT);
                    } catch (AuthenticationException e) {
                        s.close();
                        throw new AuthenticationException("the job's store at " + address + " failed authentication: "
                                + e.getMessage() + "; every rank needs the same " + JobSecret.ENV + " or "
                                + JobSecret.FILE_ENV);
                    }
                }
                TcpStore store = new TcpStore(address, timeout, s);
                store.out.writeLong(TcpStoreServer.HELLO);
                store.out.writeInt(TcpStoreServer.VERSION);
                store.out.flush();
                long hello;
                try {
                    hello = store.in.readLong();
                } catch (java.io.EOFException e) {
                    s.close();
                    throw new AuthenticationException("the job's store at " + address + " closed the connection at "
                            + "once: it wants the job's secret (set " + JobSecret.ENV + " or " + JobSecret.FILE_ENV
                            + " as on rank 0), or MASTER_PORT is another program's port");
                }
                if (hello != TcpStoreServer.HELLO) {
                    s.close();
                    throw new IllegalStateException("the service at " + address + " is not a Cohort job store; "
                            + "is MASTER_PORT another program's port?");
                }
                return store;
            } catch (IOException e) {
                last = e;
                try {
                    s.close();
                } catch (IOException ignored) {
                    // trying again
                }
                try {
                    Thread.sleep(Math.min(100, Math.max(1, left)));
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new StoreTimeoutException("interrupted while connecting to the job's store at " + address);
                }
            }
        }
    }

    /** Bounds every later call but {@link #await}'s (which has its own deadline) by {@code timeout}. */
    public synchronized TcpStore timeout(Duration timeout) {
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("a store timeout must be positive, got " + timeout);
        }
        this.timeout = timeout;
        return this;
    }

    /** The store's address, {@code host:port}. */
    public String address() {
        return address;
    }

    @Override
    public synchronized void set(String key, String value) {
        ask(
                "set '" + key + "'",
                () -> {
                    request(TcpStoreServer.SET, key);
                    out.writeUTF(value);
                },
                () -> {
                    in.readByte();
                    return null;
                });
    }

    @Override
    public synchronized String get(String key) {
        return ask("get '" + key + "'", () -> request(TcpStoreServer.GET, key), () -> {
            if (in.readByte() == TcpStoreServer.MISSING) {
                throw new java.util.NoSuchElementException("no key '" + key + "' in the job's store at " + address);
            }
            return in.readUTF();
        });
    }

    @Override
    public synchronized long add(String key, long delta) {
        String what = "add to '" + key + "'";
        return ask(
                what,
                () -> {
                    request(TcpStoreServer.ADD, key);
                    out.writeLong(delta);
                },
                () -> {
                    if (in.readByte() != TcpStoreServer.OK) {
                        throw new IllegalStateException(what + ": " + in.readUTF());
                    }
                    return in.readLong();
                });
    }

    @Override
    public synchronized boolean check(String key) {
        return ask("check '" + key + "'", () -> request(TcpStoreServer.CHECK, key), () -> {
            in.readByte();
            return in.readBoolean();
        });
    }

    @Override
    public synchronized void await(List<String> keys, long deadlineNanos) {
        long millis = Math.max(0, (deadlineNanos - System.nanoTime()) / 1_000_000);
        String what = "wait for " + keys;
        call(
                millis + ANSWER_SLACK_MILLIS,
                () -> {
                    out.writeByte(TcpStoreServer.WAIT);
                    out.writeInt(keys.size());
                    for (String k : keys) {
                        out.writeUTF(k);
                    }
                    out.writeLong(millis);
                },
                what);
        String timedOut = read(what, () -> in.readByte() == TcpStoreServer.OK ? null : in.readUTF());
        if (timedOut != null) {
            throw new StoreTimeoutException(timedOut + " (job's store at " + address + ")");
        }
    }

    private interface Io<T> {
        T run() throws IOException;
    }

    private interface Send {
        void run() throws IOException;
    }

    /** Sends a request; its answer must come within {@code answerMillis}. */
    private void call(long answerMillis, Send request, String what) {
        try {
            socket.setSoTimeout((int) Math.max(1, Math.min(Integer.MAX_VALUE, answerMillis)));
            request.run();
            out.flush();
        } catch (IOException e) {
            throw broken(what, e);
        }
    }

    /** Sends a request about one key: its type, then the key. */
    private void request(byte type, String key) throws IOException {
        out.writeByte(type);
        out.writeUTF(key);
    }

    /** {@link #call}, within this store's timeout, then reads the answer. */
    private <T> T ask(String what, Send request, Io<T> answer) {
        call(timeout.toMillis(), request, what);
        return read(what, answer);
    }

    private <T> T read(String what, Io<T> answer) {
        try {
            return answer.run();
        } catch (SocketTimeoutException e) {
            throw new StoreTimeoutException("the job's store at " + address + " did not answer " + what + " in time");
        } catch (IOException e) {
            throw broken(what, e);
        }
    }

    private UncheckedIOException broken(String what, IOException e) {
        return new UncheckedIOException(
                "the job's store at " + address + " is gone (" + what + ": " + e.getMessage()
                        + "); rank 0, which hosts it, has probably stopped",
                e);
    }

    @Override
    public void close() {
        try {
            socket.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }
}
