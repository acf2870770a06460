package dev.cohort.runtime.auth;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Arrays;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Mutual challenge-response over a fresh connection: each side proves it knows the
 * {@link JobSecret} with an HMAC-SHA256 over both sides' random nonces and the connection's
 * purpose, so the secret never crosses the wire and a recorded handshake proves nothing later.
 *
 * <pre>
 *   client -> server   "CohAuthC" clientNonce(32)                         {@value #HELLO_BYTES} bytes
 *   server -> client   "CohAuthS" serverNonce(32) proof("server")(32)      {@value #ANSWER_BYTES} bytes
 *   client -> server   proof("client")(32)                                 {@value #PROOF_BYTES} bytes
 * </pre>
 *
 * The client checks the server's proof before it sends its own, so it never talks to an impostor;
 * its protocol's bytes may follow its proof at once. The server reads nothing else until the
 * client's proof matched. An object holds one side's state; {@link #asClient} and
 * {@link #asServer} run it over a blocking socket, selector loops drive it step by step.
 */
public final class Handshake {

    public static final int HELLO_BYTES = 8 + 32;
    public static final int ANSWER_BYTES = 8 + 32 + 32;
    public static final int PROOF_BYTES = 32;
    private static final byte[] CLIENT_MAGIC = "CohAuthC".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] SERVER_MAGIC = "CohAuthS".getBytes(StandardCharsets.US_ASCII);
    private static final SecureRandom RANDOM = new SecureRandom();

    private final JobSecret secret;
    private final String purpose;
    private byte[] clientNonce;
    private byte[] serverNonce;

    private Handshake(JobSecret secret, String purpose) {
        this.secret = secret;
        this.purpose = purpose;
    }

    /** The dialing side of a connection for {@code purpose} (both sides name the same one). */
    public static Handshake client(JobSecret secret, String purpose) {
        Handshake h = new Handshake(secret, purpose);
        h.clientNonce = nonce();
        return h;
    }

    /** The accepting side of a connection for {@code purpose}. */
    public static Handshake server(JobSecret secret, String purpose) {
        return new Handshake(secret, purpose);
    }

    /**
     * Whether the first {@code length} bytes of {@code received} can still begin a client's hello:
     * lets a listener refuse a client without the secret as soon as its first bytes arrive, not at
     * the handshake's timeout.
     */
    public static boolean mayOpenHandshake(byte[] received, int length) {
        int n = Math.min(length, CLIENT_MAGIC.length);
        return Arrays.equals(received, 0, n, CLIENT_MAGIC, 0, n);
    }

    /** Client, first: the bytes to send. */
    public byte[] hello() {
        return ByteBuffer.allocate(HELLO_BYTES)
                .put(CLIENT_MAGIC)
                .put(clientNonce)
                .array();
    }

    /**
     * Server: takes the client's {@value #HELLO_BYTES} bytes and returns the answer to send.
     *
     * @throws AuthenticationException when they are not a Cohort handshake
     */
    public byte[] answer(byte[] hello) {
        if (hello.length != HELLO_BYTES || !Arrays.equals(hello, 0, 8, CLIENT_MAGIC, 0, 8)) {
            throw new AuthenticationException("it did not open with Cohort's authentication handshake "
                    + "(a process without the job's secret, or not Cohort's)");
        }
        clientNonce = Arrays.copyOfRange(hello, 8, HELLO_BYTES);
        serverNonce = nonce();
        return ByteBuffer.allocate(ANSWER_BYTES)
                .put(SERVER_MAGIC)
                .put(serverNonce)
                .put(proof("server"))
                .array();
    }

    /**
     * Client: checks the server's answer and returns this side's proof to send.
     *
     * @throws AuthenticationException when the server does not know the secret
     */
    public byte[] prove(byte[] answer) {
        if (answer.length != ANSWER_BYTES || !Arrays.equals(answer, 0, 8, SERVER_MAGIC, 0, 8)) {
            throw new AuthenticationException("it did not answer Cohort's authentication handshake "
                    + "(does it run without the job's secret, or is it not Cohort's?)");
        }
        serverNonce = Arrays.copyOfRange(answer, 8, 40);
        if (!MessageDigest.isEqual(proof("server"), Arrays.copyOfRange(answer, 40, ANSWER_BYTES))) {
            throw new AuthenticationException("it does not know this job's secret (another job's, or a stranger)");
        }
        return proof("client");
    }

    /**
     * Server: checks the client's proof.
     *
     * @throws AuthenticationException when the client does not know the secret
     */
    public void check(byte[] clientProof) {
        if (serverNonce == null) {
            throw new IllegalStateException("check before answer");
        }
        if (!MessageDigest.isEqual(proof("client"), clientProof)) {
            throw new AuthenticationException(
                    "its proof does not match this job's secret " + "(a wrong secret, or a replayed handshake)");
        }
    }

    /**
     * Runs the client's side on {@code socket} within {@code timeout}.
     *
     * @throws AuthenticationException when the other end is not of this job (it says why)
     * @throws IOException when the connection fails or the other end closes it
     */
    public static void asClient(Socket socket, JobSecret secret, String purpose, Duration timeout) throws IOException {
        Handshake h = client(secret, purpose);
        int before = socket.getSoTimeout();
        socket.setSoTimeout(millis(timeout));
        OutputStream out = socket.getOutputStream();
        out.write(h.hello());
        out.flush();
        byte[] answer = readAnswer(socket.getInputStream(), ANSWER_BYTES, timeout);
        out.write(h.prove(answer));
        out.flush();
        socket.setSoTimeout(before);
    }

    /**
     * Runs the server's side on {@code socket} within {@code timeout}.
     *
     * @throws AuthenticationException when the client is not of this job (it says why)
     * @throws IOException when the connection fails
     */
    public static void asServer(Socket socket, JobSecret secret, String purpose, Duration timeout) throws IOException {
        Handshake h = server(secret, purpose);
        int before = socket.getSoTimeout();
        socket.setSoTimeout(millis(timeout));
        InputStream in = socket.getInputStream();
        byte[] magic = readOrRefuse(in, CLIENT_MAGIC.length, timeout, "its handshake");
        if (!mayOpenHandshake(magic, magic.length)) {
            h.answer(magic); // refuses, saying why
        }
        byte[] hello = ByteBuffer.allocate(HELLO_BYTES)
                .put(magic)
                .put(readOrRefuse(in, HELLO_BYTES - magic.length, timeout, "its handshake"))
                .array();
        OutputStream out = socket.getOutputStream();
        out.write(h.answer(hello));
        out.flush();
        h.check(readOrRefuse(in, PROOF_BYTES, timeout, "its proof"));
        socket.setSoTimeout(before);
    }

    private static byte[] readAnswer(InputStream in, int n, Duration timeout) throws IOException {
        try {
            byte[] b = in.readNBytes(n);
            if (b.length < n) {
                throw new AuthenticationException("it closed the connection instead of answering Cohort's "
                        + "authentication handshake (does it run without the job's secret, or with another?)");
            }
            return b;
        } catch (SocketTimeoutException e) {
            throw new AuthenticationException("it did not answer Cohort's authentication handshake within "
                    + timeout.toMillis() + " ms (does it run without the job's secret?)");
        }
    }

    private static byte[] readOrRefuse(InputStream in, int n, Duration timeout, String what) throws IOException {
        try {
            byte[] b = in.readNBytes(n);
            if (b.length < n) {
                throw new AuthenticationException("it closed the connection before sending " + what);
            }
            return b;
        } catch (SocketTimeoutException e) {
            throw new AuthenticationException("it did not send " + what + " within " + timeout.toMillis() + " ms");
        }
    }

    private static int millis(Duration d) {
        return (int) Math.max(1, Math.min(Integer.MAX_VALUE, d.toMillis()));
    }

    private byte[] proof(String side) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(secret.key(), "HmacSHA256"));
            mac.update(side.getBytes(StandardCharsets.US_ASCII));
            mac.update((byte) 0);
            mac.update(purpose.getBytes(StandardCharsets.UTF_8));
            mac.update((byte) 0);
            mac.update(clientNonce);
            mac.update(serverNonce);
            return mac.doFinal();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is not available in this JDK", e);
        }
    }

    private static byte[] nonce() {
        byte[] n = new byte[32];
        RANDOM.nextBytes(n);
        return n;
    }
}
