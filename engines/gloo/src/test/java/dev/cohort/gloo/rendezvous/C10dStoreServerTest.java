package dev.cohort.gloo.rendezvous;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.cohort.runtime.auth.JobSecret;
import dev.cohort.testkit.JvmWorkers;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.bytedeco.javacpp.chrono.Milliseconds;
import org.bytedeco.pytorch.ByteVector;
import org.bytedeco.pytorch.Store;
import org.bytedeco.pytorch.StringVector;
import org.bytedeco.pytorch.TCPStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Rank 0's store, served in Java behind the guard, against libtorch 2.10's own c10d client: every
 * call gets the answer the client expects (a wait that times out cancels and leaves the connection
 * usable, a wait is woken by another client's set), and rank 0 listens only on the port it was
 * given (and, with a secret, its own relay on loopback).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class C10dStoreServerTest {

    @Test
    void libtorchsClientGetsEveryAnswerItExpects() throws Exception {
        int port = JvmWorkers.freePort();
        try (Rendezvous rendezvous =
                Rendezvous.tcp("127.0.0.1", port, 0, 1, Duration.ofSeconds(20), Optional.empty())) {
            Store store = rendezvous.client();
            store.set("a", "1");
            assertThat(store.get_to_str("a")).isEqualTo("1");
            assertThat(store.add("n", 5)).isEqualTo(5);
            assertThat(store.add("n", -2)).isEqualTo(3);
            assertThat(store.get_to_str("n")).isEqualTo("3");
            assertThat(store.compareSet("a", "1", "2")).isEqualTo("2");
            assertThat(store.compareSet("a", "1", "3"))
                    .as("a stale expectation leaves the value")
                    .isEqualTo("2");
            assertThat(store.compareSet("fresh", "", "x")).isEqualTo("x");
            assertThat(store.check(new StringVector("a", "n"))).isTrue();
            assertThat(store.check(new StringVector("a", "missing"))).isFalse();
            assertThat(store.getNumKeys()).isEqualTo(3);
            store.append("a", new ByteVector((byte) 'b', (byte) 'c'));
            assertThat(store.get_to_str("a")).isEqualTo("2bc");
            assertThat(store.deleteKey("fresh")).isTrue();
            assertThat(store.deleteKey("fresh")).isFalse();
            Set<String> keys = new HashSet<>();
            StringVector listed = store.listKeys();
            for (long i = 0; i < listed.size(); i++) {
                keys.add(listed.get(i).getString(StandardCharsets.UTF_8));
            }
            assertThat(keys).containsExactlyInAnyOrder("a", "n");

            long start = System.nanoTime();
            assertThatThrownBy(() -> store._wait(new StringVector("never"), new Milliseconds(300)))
                    .hasMessageContaining("wait timeout after 300ms");
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
            assertThat(store.get_to_str("n"))
                    .as("the connection goes on after a cancelled wait")
                    .isEqualTo("3");

            TCPStore other = LibtorchTcpStore.on(port, false, Duration.ofSeconds(20));
            try {
                CompletableFuture<String> waited = CompletableFuture.supplyAsync(() -> {
                    store._wait(new StringVector("later"), new Milliseconds(20_000));
                    return store.get_to_str("later");
                });
                assertThat(waited).as("a wait for a key nobody set").isNotDone();
                other.set("later", "here");
                assertThat(waited.get(10, TimeUnit.SECONDS)).isEqualTo("here");
                other.queuePush("q", new ByteVector((byte) 7));
                other.queuePush("q", new ByteVector((byte) 8));
                // A push is answered by nothing: a query on the same connection comes after it, one on another may not.
                assertThat(other.queueLen("q")).isEqualTo(2);
                assertThat(store.queuePop("q", false).get()).containsExactly(7);
                assertThat(store.queuePop("q", true).get()).containsExactly(8);
                assertThat(store.queueLen("q")).isZero();
            } finally {
                other.close();
            }
        }
    }

    @Test
    void rankZeroListensOnlyOnItsPortAndWithASecretItsOwnRelay() throws Exception {
        int port = JvmWorkers.freePort();
        Set<Integer> before = listeningPorts();
        try (Rendezvous rendezvous =
                Rendezvous.tcp("127.0.0.1", port, 0, 1, Duration.ofSeconds(20), Optional.empty())) {
            rendezvous.client().set("k", "v");
            Set<Integer> opened = listeningPorts();
            opened.removeAll(before);
            assertThat(opened).containsExactly(port);
        }
        int securedPort = JvmWorkers.freePort();
        try (Rendezvous rendezvous = Rendezvous.tcp(
                "127.0.0.1", securedPort, 0, 1, Duration.ofSeconds(20), Optional.of(JobSecret.generate()))) {
            assertThat(rendezvous.client().get_to_str(setAndKey(rendezvous.client())))
                    .isEqualTo("v");
            Set<Integer> opened = listeningPorts();
            opened.removeAll(before);
            assertThat(opened).hasSize(2).contains(securedPort); // and the relay, which serves this process only
        }
    }

    private static String setAndKey(Store store) {
        store.set("k", "v");
        return "k";
    }

    /** The TCP ports this process listens on, from /proc. */
    private static Set<Integer> listeningPorts() throws Exception {
        Set<String> mine = new HashSet<>();
        try (DirectoryStream<Path> fds = Files.newDirectoryStream(Path.of("/proc/self/fd"))) {
            for (Path fd : fds) {
                try {
                    String target = Files.readSymbolicLink(fd).toString();
                    if (target.startsWith("socket:[")) {
                        mine.add(target.substring(8, target.length() - 1));
                    }
                } catch (java.io.IOException e) {
                    // closed meanwhile
                }
            }
        }
        Set<Integer> ports = new HashSet<>();
        for (String table : new String[] {"/proc/net/tcp", "/proc/net/tcp6"}) {
            for (String line : Files.readAllLines(Path.of(table))) {
                String[] f = line.trim().split("\\s+");
                if (f.length > 9 && f[3].equals("0A") && mine.contains(f[9])) {
                    String local = f[1];
                    ports.add(Integer.parseInt(local.substring(local.lastIndexOf(':') + 1), 16));
                }
            }
        }
        return ports;
    }
}
