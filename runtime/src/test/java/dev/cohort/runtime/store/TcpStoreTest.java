package dev.cohort.runtime.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.cohort.runtime.auth.AuthenticationException;
import dev.cohort.runtime.auth.Handshake;
import dev.cohort.runtime.auth.JobSecret;
import java.io.DataInputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The job's store over TCP: a server and its clients, each with its own connection. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TcpStoreTest {

    private static final Duration TIMEOUT = Duration.ofSeconds(10);

    private static long in(long millis) {
        return System.nanoTime() + millis * 1_000_000;
    }

    private static int freePort() throws Exception {
        try (ServerSocket probe = new ServerSocket(0)) {
            return probe.getLocalPort();
        }
    }

    @Test
    void clientsShareValuesCountersAndWaits() throws Exception {
        try (TcpStoreServer server = TcpStoreServer.start(InetAddress.getLoopbackAddress(), 0, Optional.empty());
                TcpStore a = TcpStore.connect("127.0.0.1", server.port(), in(5_000), TIMEOUT, Optional.empty());
                TcpStore b = TcpStore.connect("127.0.0.1", server.port(), in(5_000), TIMEOUT, Optional.empty())) {
            CompletableFuture<Void> waiting = CompletableFuture.runAsync(() -> b.await(List.of("x", "y"), in(5_000)));
            assertThat(server.awaitWaiting(1, in(5_000))).isTrue();
            a.set("x", "1");
            assertThat(a.check("x")).isTrue(); // answered: x is applied, and the wait saw it
            assertThat(server.awaitWaiting(1, System.nanoTime()))
                    .as("still waiting for y")
                    .isTrue();
            assertThat(waiting).isNotDone();
            a.set("y", "é and spaces");
            waiting.get(5, TimeUnit.SECONDS);
            assertThat(b.get("y")).isEqualTo("é and spaces");
            assertThat(b.check("x")).isTrue();
            assertThat(b.check("z")).isFalse();
            assertThat(a.add("n", 2)).isEqualTo(2);
            assertThat(b.add("n", 3)).isEqualTo(5);
            assertThatThrownBy(() -> a.get("z")).hasMessageContaining("no key 'z'");
            assertThatThrownBy(() -> a.add("y", 1)).hasMessageContaining("not a number");
            // The connection is still in step after the errors.
            assertThat(a.get("x")).isEqualTo("1");
        }
    }

    @Test
    void aWaitEndsAtItsDeadlineNamingTheMissingKeys() {
        try (TcpStoreServer server = TcpStoreServer.start(InetAddress.getLoopbackAddress(), 0, Optional.empty());
                TcpStore a = TcpStore.connect("127.0.0.1", server.port(), in(5_000), TIMEOUT, Optional.empty())) {
            a.set("here", "1");
            long deadline = in(300);
            assertThatThrownBy(() -> a.await(List.of("here", "missing"), deadline))
                    .isInstanceOf(StoreTimeoutException.class)
                    .hasMessageContaining("[missing]");
            // Not before its deadline (the wait's end is bounded by the test's @Timeout).
            assertThat(System.nanoTime()).isGreaterThanOrEqualTo(deadline - 50_000_000L);
        }
    }

    @Test
    void aClientWaitsForAServerThatStartsLater() throws Exception {
        int port = freePort();
        CompletableFuture<TcpStore> client = CompletableFuture.supplyAsync(
                () -> TcpStore.connect("127.0.0.1", port, in(10_000), TIMEOUT, Optional.empty()));
        Thread.sleep(500);
        try (TcpStoreServer server = TcpStoreServer.start(InetAddress.getLoopbackAddress(), port, Optional.empty());
                TcpStore c = client.get(10, TimeUnit.SECONDS)) {
            c.set("k", "v");
            assertThat(c.get("k")).isEqualTo("v");
        }
    }

    @Test
    void noServerFailsAtTheDeadlineSayingWhatToCheck() throws Exception {
        int port = freePort();
        assertThatThrownBy(() -> TcpStore.connect("127.0.0.1", port, in(400), TIMEOUT, Optional.empty()))
                .isInstanceOf(StoreTimeoutException.class)
                .hasMessageContaining("127.0.0.1:" + port)
                .hasMessageContaining("MASTER_PORT");
    }

    @Test
    void anotherServiceOnThePortIsNamed() throws Exception {
        try (ServerSocket other = new ServerSocket(0)) {
            CompletableFuture.runAsync(() -> {
                try (Socket s = other.accept();
                        OutputStream out = s.getOutputStream()) {
                    new DataInputStream(s.getInputStream()).readNBytes(12);
                    out.write("HTTP/1.1 400 Bad Request\r\n\r\n".getBytes());
                    out.flush();
                    Thread.sleep(500);
                } catch (Exception ignored) {
                    // the test reads the client's error
                }
            });
            assertThatThrownBy(() ->
                            TcpStore.connect("127.0.0.1", other.getLocalPort(), in(3_000), TIMEOUT, Optional.empty()))
                    .hasMessageContaining("not a Cohort job store");
        }
    }

    @Test
    void strangersAreDroppedAndClientsServedOn() throws Exception {
        try (TcpStoreServer server = TcpStoreServer.start(InetAddress.getLoopbackAddress(), 0, Optional.empty());
                TcpStore a = TcpStore.connect("127.0.0.1", server.port(), in(5_000), TIMEOUT, Optional.empty())) {
            try (Socket stranger = new Socket("127.0.0.1", server.port())) {
                stranger.getOutputStream().write("GET / HTTP/1".getBytes()); // as long as a hello: nothing left unread
                stranger.setSoTimeout(5_000);
                assertThat(stranger.getInputStream().read()).isEqualTo(-1); // closed on it
            }
            a.set("still", "served");
            assertThat(a.get("still")).isEqualTo("served");
        }
    }

    @Test
    void withASecretOnlyClientsThatProveItAreServedAndTheOthersAreToldWhy() throws Exception {
        JobSecret secret = JobSecret.of("the store test's secret");
        Optional<JobSecret> mine = Optional.of(secret);
        try (TcpStoreServer server = TcpStoreServer.start(InetAddress.getLoopbackAddress(), 0, mine);
                TcpStore a = TcpStore.connect("127.0.0.1", server.port(), in(5_000), TIMEOUT, mine)) {
            a.set("k", "v");
            assertThatThrownBy(() -> TcpStore.connect("127.0.0.1", server.port(), in(5_000), TIMEOUT, Optional.empty()))
                    .isInstanceOf(AuthenticationException.class)
                    .hasMessageContaining("wants the job's secret");
            assertThatThrownBy(() -> TcpStore.connect(
                            "127.0.0.1",
                            server.port(),
                            in(5_000),
                            TIMEOUT,
                            Optional.of(JobSecret.of("another job's secret!"))))
                    .isInstanceOf(AuthenticationException.class)
                    .hasMessageContaining("does not know this job's secret");
            // A recorded client session (handshake, then a request), replayed: refused before the request is read.
            byte[] replay = recordedClientSession(secret);
            try (Socket stranger = new Socket("127.0.0.1", server.port())) {
                stranger.setSoTimeout(5_000);
                stranger.getOutputStream().write(replay);
                byte[] answer = stranger.getInputStream().readNBytes(Handshake.ANSWER_BYTES);
                assertThat(answer).hasSize(Handshake.ANSWER_BYTES);
                assertThat(stranger.getInputStream().read()).isEqualTo(-1);
            }
            long end = System.nanoTime() + 5_000_000_000L;
            while (server.refused() < 3 && System.nanoTime() < end) {
                Thread.sleep(10);
            }
            assertThat(server.refused()).isEqualTo(3);
            assertThat(a.get("k")).isEqualTo("v");
        }
        try (TcpStoreServer plain = TcpStoreServer.start(InetAddress.getLoopbackAddress(), 0, Optional.empty())) {
            assertThatThrownBy(() -> TcpStore.connect("127.0.0.1", plain.port(), in(5_000), TIMEOUT, mine))
                    .isInstanceOf(AuthenticationException.class)
                    .hasMessageContaining("failed authentication");
        }
    }

    /** What a client with {@code secret} sends to a store: its handshake's hello and proof, then a request. */
    private static byte[] recordedClientSession(JobSecret secret) throws Exception {
        java.io.ByteArrayOutputStream sent = new java.io.ByteArrayOutputStream();
        try (ServerSocket listening = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            java.util.concurrent.CompletableFuture<Void> server = java.util.concurrent.CompletableFuture.runAsync(
                    () -> {
                        try (Socket s = listening.accept()) {
                            java.io.InputStream in = s.getInputStream();
                            sent.write(in.readNBytes(Handshake.HELLO_BYTES));
                            Handshake h = Handshake.server(secret, "cohort job store");
                            s.getOutputStream()
                                    .write(h.answer(
                                            java.util.Arrays.copyOf(sent.toByteArray(), Handshake.HELLO_BYTES)));
                            byte[] proof = in.readNBytes(Handshake.PROOF_BYTES);
                            h.check(proof);
                            sent.write(proof);
                            sent.write(in.readNBytes(12)); // the store's hello
                        } catch (Exception e) {
                            throw new IllegalStateException(e);
                        }
                    },
                    java.util.concurrent.Executors.newSingleThreadExecutor());
            try (Socket c = new Socket("127.0.0.1", listening.getLocalPort())) {
                Handshake.asClient(c, secret, "cohort job store", TIMEOUT);
                c.getOutputStream().write("CohortKV\0\0\0\1".getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
                server.get(10, TimeUnit.SECONDS);
            }
        }
        return sent.toByteArray();
    }

    @Test
    void aClientOfAStoppedServerFailsAtOnceNamingIt() {
        TcpStoreServer server = TcpStoreServer.start(InetAddress.getLoopbackAddress(), 0, Optional.empty());
        try (TcpStore a = TcpStore.connect("127.0.0.1", server.port(), in(5_000), TIMEOUT, Optional.empty())) {
            a.set("k", "v");
            server.close();
            assertThatThrownBy(() -> {
                        a.set("k", "w");
                        a.get("k");
                    })
                    .isInstanceOf(UncheckedIOException.class)
                    .hasMessageContaining("is gone");
        }
    }
}
