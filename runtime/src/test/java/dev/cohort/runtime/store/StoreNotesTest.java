package dev.cohort.runtime.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
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
        // Answers the hello, then reads requests and never answers: every call would wait for its
        // timeout. It returns the requests it got once the client closes.
        ExecutorService serverThread = Executors.newSingleThreadExecutor();
        try (ServerSocket silent = new ServerSocket(0)) {
            Future<List<Byte>> requests = serverThread.submit(() -> {
                List<Byte> ops = new ArrayList<>();
                try (Socket s = silent.accept()) {
                    DataInputStream in = new DataInputStream(s.getInputStream());
                    in.readLong();
                    new DataOutputStream(s.getOutputStream()).writeLong(TcpStoreServer.HELLO);
                    in.readInt(); // the protocol's version
                    while (true) {
                        byte op = in.readByte();
                        ops.add(op);
                        in.readUTF();
                        if (op == TcpStoreServer.SET) {
                            in.readUTF();
                        }
                    }
                } catch (EOFException closed) {
                    return ops;
                }
            });
            try (TcpStore store = TcpStore.connect(
                            "127.0.0.1", silent.getLocalPort(), in(5_000), Duration.ofSeconds(10), Optional.empty())
                    .timeout(Duration.ofMillis(300))) {
                JobNotes notes = new StoreNotes(store);
                assertThat(notes.post("k", "text")).isFalse();
                assertThat(notes.read("k")).isEmpty();
                assertThat(notes.post("k", "again")).isFalse();
            }
            // Only the first call reached the store; the later ones gave up without asking it.
            assertThat(requests.get(10, TimeUnit.SECONDS)).containsExactly(TcpStoreServer.SET);
        } finally {
            serverThread.shutdownNow();
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
