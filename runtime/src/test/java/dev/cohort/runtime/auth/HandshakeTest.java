package dev.cohort.runtime.auth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The challenge-response over real loopback sockets: who passes, who is refused and why. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class HandshakeTest {

    private static final Duration T = Duration.ofSeconds(5);
    private static final JobSecret SECRET = JobSecret.of("the job's own secret");
    private static final JobSecret OTHER = JobSecret.of("another job's secret");

    /** Runs {@code server} on one accepted connection and {@code client} on a connection to it. */
    private static Outcome meet(SocketSide server, SocketSide client) throws Exception {
        try (ServerSocket listening = new ServerSocket(0, 4, InetAddress.getLoopbackAddress())) {
            CompletableFuture<Throwable> served = CompletableFuture.supplyAsync(() -> {
                try (Socket s = listening.accept()) {
                    server.run(s);
                    return null;
                } catch (Throwable t) {
                    return t;
                }
            });
            Throwable clientFailure = null;
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), listening.getLocalPort()));
                client.run(s);
            } catch (Throwable t) {
                clientFailure = t;
            }
            return new Outcome(served.get(10, TimeUnit.SECONDS), clientFailure);
        }
    }

    private interface SocketSide {
        void run(Socket s) throws Exception;
    }

    private record Outcome(Throwable server, Throwable client) {}

    @Test
    void bothSidesWithTheSecretPassAndTheProtocolFollows() throws Exception {
        Outcome o = meet(
                s -> {
                    Handshake.asServer(s, SECRET, "store", T);
                    assertThat(s.getInputStream().read()).isEqualTo(42);
                },
                s -> {
                    Handshake.asClient(s, SECRET, "store", T);
                    s.getOutputStream().write(42);
                });
        assertThat(o.server()).isNull();
        assertThat(o.client()).isNull();
    }

    @Test
    void aWrongSecretIsRefusedOnBothSidesAndNeitherProvesAnything() throws Exception {
        Outcome o = meet(s -> Handshake.asServer(s, SECRET, "store", T), s -> Handshake.asClient(s, OTHER, "store", T));
        assertThat(o.client())
                .isInstanceOf(AuthenticationException.class)
                .hasMessageContaining("does not know this job's secret");
        // The client stops at the server's proof, so the server sees no proof of its own.
        assertThat(o.server())
                .isInstanceOf(AuthenticationException.class)
                .hasMessageContaining("closed the connection");
    }

    @Test
    void aClientWithoutASecretIsRefusedBeforeAnyOfItsBytesAreRead() throws Exception {
        Outcome o = meet(s -> Handshake.asServer(s, SECRET, "store", T), s -> {
            s.getOutputStream().write("CohortKV and then a store request ....... ".getBytes());
            s.getInputStream().read();
        });
        assertThat(o.server())
                .isInstanceOf(AuthenticationException.class)
                .hasMessageContaining("did not open with Cohort's authentication handshake");
    }

    @Test
    void aSilentClientIsRefusedAtTheTimeout() throws Exception {
        Outcome o = meet(
                s -> Handshake.asServer(s, SECRET, "store", Duration.ofMillis(300)),
                s -> s.getInputStream().read());
        assertThat(o.server()).isInstanceOf(AuthenticationException.class).hasMessageContaining("within 300 ms");
    }

    @Test
    void aServerWithoutASecretFailsTheClientSayingSo() throws Exception {
        Outcome o = meet(
                s -> s.getInputStream().readNBytes(Handshake.HELLO_BYTES),
                s -> Handshake.asClient(s, SECRET, "store", T));
        assertThat(o.client())
                .isInstanceOf(AuthenticationException.class)
                .hasMessageContaining("closed the connection instead of answering");
    }

    @Test
    void anotherPurposeIsRefused() throws Exception {
        Outcome o = meet(s -> Handshake.asServer(s, SECRET, "store", T), s -> Handshake.asClient(s, SECRET, "mesh", T));
        assertThat(o.client()).isInstanceOf(AuthenticationException.class);
    }

    @Test
    void aRecordedClientHandshakeReplayedLaterIsRefused() throws Exception {
        ByteArrayOutputStream recorded = new ByteArrayOutputStream();
        Outcome first = meet(
                s -> {
                    Handshake.asServer(s, SECRET, "store", T);
                    recorded.write(s.getInputStream().readNBytes(4));
                },
                s -> {
                    // what a listener on the wire records: every byte the client sent
                    Socket recording = new RecordingSocket(s, recorded);
                    Handshake.asClient(recording, SECRET, "store", T);
                    recording.getOutputStream().write(new byte[] {1, 2, 3, 4});
                    recording.getOutputStream().flush();
                });
        assertThat(first.server()).isNull();
        byte[] replay = recorded.toByteArray();
        assertThat(replay).hasSize(Handshake.HELLO_BYTES + Handshake.PROOF_BYTES + 4 + 4);
        Outcome again = meet(s -> Handshake.asServer(s, SECRET, "store", T), s -> {
            s.getOutputStream().write(replay, 0, Handshake.HELLO_BYTES + Handshake.PROOF_BYTES + 4);
            s.getInputStream().readNBytes(Handshake.ANSWER_BYTES);
        });
        assertThat(again.server())
                .isInstanceOf(AuthenticationException.class)
                .hasMessageContaining("replayed handshake");
    }

    @Test
    void secretsComeFromTheEnvironmentOrAPrivateFile(@TempDir Path dir) throws IOException {
        assertThat(JobSecret.from(Map.of())).isEmpty();
        assertThat(JobSecret.from(Map.of(JobSecret.ENV, "0123456789abcdef0123"))
                        .orElseThrow()
                        .text())
                .isEqualTo("0123456789abcdef0123");
        assertThatThrownBy(() -> JobSecret.from(Map.of(JobSecret.ENV, "short"))).hasMessageContaining("16 or more");
        Path file = dir.resolve("secret");
        JobSecret generated = JobSecret.generate();
        generated.writeTo(file);
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file)))
                .isEqualTo("rw-------");
        assertThat(JobSecret.from(Map.of(JobSecret.FILE_ENV, file.toString()))
                        .orElseThrow()
                        .text())
                .isEqualTo(generated.text())
                .hasSize(64);
        assertThatThrownBy(() -> JobSecret.from(
                        Map.of(JobSecret.FILE_ENV, dir.resolve("absent").toString())))
                .hasMessageContaining("cannot read the job secret from");
        assertThat(generated.toString()).doesNotContain(generated.text());
    }

    /** A socket whose output is also copied into {@code tap}. */
    private static final class RecordingSocket extends Socket {
        private final Socket inner;
        private final java.io.OutputStream out;

        RecordingSocket(Socket inner, ByteArrayOutputStream tap) throws IOException {
            this.inner = inner;
            java.io.OutputStream real = inner.getOutputStream();
            this.out = new java.io.OutputStream() {
                @Override
                public void write(int b) throws IOException {
                    tap.write(b);
                    real.write(b);
                }

                @Override
                public void write(byte[] b, int off, int len) throws IOException {
                    tap.write(b, off, len);
                    real.write(b, off, len);
                }
            };
        }

        @Override
        public InputStream getInputStream() throws IOException {
            return inner.getInputStream();
        }

        @Override
        public java.io.OutputStream getOutputStream() {
            return out;
        }

        @Override
        public int getSoTimeout() throws java.net.SocketException {
            return inner.getSoTimeout();
        }

        @Override
        public void setSoTimeout(int timeout) throws java.net.SocketException {
            inner.setSoTimeout(timeout);
        }
    }
}
