import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLServerSocket;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;

/**
 * What TLS would cost on Cohort's data path: one stream over loopback, plain TCP against TLS 1.3
 * (the JDK's provider, its default AES-GCM suite), in 1 MiB writes, both ends in this JVM (as two
 * ranks of one host share its CPUs). Prints MB/s per round and the medians as JSON.
 *
 *   java scripts/TlsCost.java [ROUNDS] [MIB_PER_ROUND]
 */
public final class TlsCost {

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 5;
        int mib = args.length > 1 ? Integer.parseInt(args[1]) : 2048;
        SSLContext tls = context();
        List<Double> plain = new ArrayList<>();
        List<Double> secure = new ArrayList<>();
        for (int r = 0; r < rounds; r++) {
            plain.add(stream(new ServerSocket(0, 1, InetAddress.getLoopbackAddress()), null, mib));
            secure.add(stream(tls.getServerSocketFactory().createServerSocket(0, 1, InetAddress.getLoopbackAddress()),
                    tls, mib));
            System.err.printf(Locale.ROOT, "round %d: plain %.0f MB/s, TLS %.0f MB/s%n", r + 1, plain.get(r), secure.get(r));
        }
        double p = median(plain);
        double t = median(secure);
        System.out.printf(Locale.ROOT, "{\"mib_per_round\": %d, \"rounds\": %d, \"plain_mb_s\": %s, \"tls_mb_s\": %s, "
                        + "\"plain_median_mb_s\": %.0f, \"tls_median_mb_s\": %.0f, \"tls_over_plain\": %.3f, "
                        + "\"protocol\": \"TLSv1.3\", \"java\": \"%s\", \"cpus\": %d}%n", mib, rounds, plain, secure, p, t,
                t / p, Runtime.version(), Runtime.getRuntime().availableProcessors());
    }

    /** MB/s of {@code mib} MiB sent through a connection to {@code server} (TLS when {@code tls} is given). */
    private static double stream(ServerSocket server, SSLContext tls, int mib) throws Exception {
        byte[] chunk = new byte[1 << 20];
        Thread reader = new Thread(() -> {
            try (server; Socket s = server.accept()) {
                InputStream in = s.getInputStream();
                byte[] b = new byte[1 << 20];
                long left = (long) mib << 20;
                while (left > 0) {
                    int n = in.read(b, 0, (int) Math.min(b.length, left));
                    if (n < 0) {
                        throw new IllegalStateException("closed early");
                    }
                    left -= n;
                }
                s.getOutputStream().write(1);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        reader.start();
        try (Socket s = tls == null ? new Socket(InetAddress.getLoopbackAddress(), server.getLocalPort())
                : tls.getSocketFactory().createSocket(InetAddress.getLoopbackAddress(), server.getLocalPort())) {
            if (s instanceof SSLSocket ssl) {
                ssl.setEnabledProtocols(new String[] {"TLSv1.3"});
                ssl.startHandshake();
            }
            OutputStream out = s.getOutputStream();
            long start = System.nanoTime();
            for (int i = 0; i < mib; i++) {
                out.write(chunk);
            }
            out.flush();
            if (s.getInputStream().read() != 1) {
                throw new IllegalStateException("no acknowledgement");
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            reader.join();
            return mib * 1.048576 / seconds;
        }
    }

    /** A context that trusts a fresh self-signed key (made with the JDK's keytool). */
    private static SSLContext context() throws Exception {
        Path dir = Files.createTempDirectory("tls-cost");
        Path store = dir.resolve("keys.p12");
        Process keytool = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "keytool").toString(),
                "-genkeypair", "-alias", "cohort", "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=localhost",
                "-validity", "1", "-storetype", "PKCS12", "-keystore", store.toString(), "-storepass", "changeit",
                "-keypass", "changeit").inheritIO().start();
        if (keytool.waitFor() != 0) {
            throw new IllegalStateException("keytool failed");
        }
        KeyStore keys = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(store)) {
            keys.load(in, "changeit".toCharArray());
        }
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(keys, "changeit".toCharArray());
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(keys);
        SSLContext context = SSLContext.getInstance("TLSv1.3");
        context.init(kmf.getKeyManagers(), tmf.getTrustManagers(), null);
        return context;
    }

    private static double median(List<Double> xs) {
        List<Double> s = new ArrayList<>(xs);
        s.sort(null);
        int n = s.size();
        return n % 2 == 1 ? s.get(n / 2) : (s.get(n / 2 - 1) + s.get(n / 2)) / 2;
    }
}
