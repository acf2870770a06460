package dev.cohort.runtime.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Notes in the job's store: shared while it answers, given up at once after it failed to. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class StoreNotesTest {

    private static long in(long millis) {
        return System.nanoTime() + millis * 1_000_000;
    }

    @Test
    void notesPostedByOneClientAreReadByAnother() {
        try (TcpStoreServer server = TcpStoreServer.start(InetAddress.getLoopbackAddress(), 0, Optional.empty());
                TcpStore a = TcpStore.connect(
                        "127.0.0.1", server.port(), in(5_000), Duration.ofSeconds(2), Optional.empty());
                TcpStore b = TcpStore.connect(
                        "127.0.0.1", server.port(), in(5_000), Duration.ofSeconds(2), Optional.empty())) {
            JobNotes mine = new StoreNotes(new PrefixStore("note/", a));
            JobNotes theirs = new StoreNotes(new PrefixStore("note/", b));
            assertThat(theirs.read("host1")).isEmpty();
            assertThat(mine.post("host1", "lost peer rank 1")).isTrue();
            assertThat(mine.post("host1", "lost peer rank 2")).isTrue();
            assertThat(theirs.read("host1")).contains("lost peer rank 2");
        }
    }

    @Test
    void aStoreThatStopsAnsweringIsWaitedForOnceThenNotAtAll() throws Exception {
        // Answers the hello, then nothing: every call would wait for its timeout.
        try (ServerSocket silent = new ServerSocket(0)) {
            Thread server = new Thread(() -> {
                try (Socket s = silent.accept()) {
                    new DataInputStream(s.getInputStream()).readLong();
                    new DataOutputStream(s.getOutputStream()).writeLong(TcpStoreServer.HELLO);
                    Thread.sleep(20_000);
                } catch (Exception ignored) {
                    // the test is over
                }
            });
            server.setDaemon(true);
            server.start();
            try (TcpStore store = TcpStore.connect(
                            "127.0.0.1", silent.getLocalPort(), in(5_000), Duration.ofSeconds(10), Optional.empty())
                    .timeout(Duration.ofMillis(300))) {
                JobNotes notes = new StoreNotes(store);
                long start = System.nanoTime();
                assertThat(notes.post("k", "text")).isFalse();
                assertThat((System.nanoTime() - start) / 1e9).isBetween(0.25, 2.0);
                start = System.nanoTime();
                assertThat(notes.read("k")).isEmpty();
                assertThat(notes.post("k", "again")).isFalse();
                assertThat((System.nanoTime() - start) / 1e9).isLessThan(0.1);
            }
            server.interrupt();
        }
    }

    @Test
    void aStoreThatIsGoneFailsTheNoteWithoutThrowing() {
        TcpStoreServer server = TcpStoreServer.start(InetAddress.getLoopbackAddress(), 0, Optional.empty());
        try (TcpStore store =
                TcpStore.connect("127.0.0.1", server.port(), in(5_000), Duration.ofSeconds(2), Optional.empty())) {
            JobNotes notes = new StoreNotes(store);
            server.close();
            assertThat(notes.post("k", "text")).isFalse();
            assertThat(notes.read("k")).isEmpty();
        }
    }
}
