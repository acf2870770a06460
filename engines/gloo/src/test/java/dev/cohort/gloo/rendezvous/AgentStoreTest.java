package dev.cohort.gloo.rendezvous;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.cohort.gloo.GlooConnectException;
import dev.cohort.testkit.JvmWorkers;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.bytedeco.pytorch.TCPStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The client of a launcher's agent store against real c10d stores of both protocol dialects: the
 * 2.x dialect against libtorch's own store (PyTorch 2.10, in this JVM), the 1.x dialect against
 * PyTorch 1.13's, which torchrun from Debian hosts (a python process). Each posts a key and reads it
 * back through a second connection, as rank 0 and another rank do, and the store's own client sees
 * the same value.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class AgentStoreTest {

    @Test
    void speaksPyTorch2sDialectToLibtorchsStore() {
        int port = JvmWorkers.freePort();
        TCPStore server = LibtorchTcpStore.on(port, true, Duration.ofSeconds(30));
        try {
            roundTrip(port);
            // c10d's own clients put "/" before every key: the raw key is the one they name without it.
            assertThat(server.get_to_str("worker/attempt_0/cohort/store")).isEqualTo("10.1.2.3 4567");
        } finally {
            server.close();
        }
    }

    @Test
    void speaksPyTorch1sDialectToTheStoreTorchrunHosts() throws Exception {
        Path python = Path.of("/usr/bin/python3");
        assumeTrue(Files.isExecutable(python), "python3 is not installed");
        int port = JvmWorkers.freePort();
        // PyTorch's own TCPStore server, as torchrun's agent runs it; it prints the key once set.
        String script = "import sys, datetime, torch.distributed as d\n"
                + "s = d.TCPStore('127.0.0.1', " + port + ", 1, True, datetime.timedelta(seconds=30), False)\n"
                + "print('ready', flush=True)\n"
                + "s.wait(['worker/attempt_0/cohort/store'])\n"
                + "print('value', s.get('worker/attempt_0/cohort/store').decode(), flush=True)\n"
                + "sys.stdin.readline()\n";
        Process store = new ProcessBuilder(python.toString(), "-c", script)
                .redirectErrorStream(true)
                .start();
        try {
            BufferedReader out =
                    new BufferedReader(new InputStreamReader(store.getInputStream(), StandardCharsets.UTF_8));
            String first = out.readLine();
            assumeTrue(first != null && first.startsWith("ready"), "PyTorch is not installed for python3: " + first);
            CompletableFuture<String> seen = CompletableFuture.supplyAsync(() -> {
                try {
                    return out.readLine();
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
            roundTrip(port);
            assertThat(seen.get(20, TimeUnit.SECONDS)).isEqualTo("value 10.1.2.3 4567");
        } finally {
            store.destroyForcibly();
            store.waitFor(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void aKeyNeverPostedTimesOutNamingIt() {
        int port = JvmWorkers.freePort();
        TCPStore server = LibtorchTcpStore.on(port, true, Duration.ofSeconds(30));
        try (AgentStore reader = AgentStore.connect("127.0.0.1", port, Duration.ofSeconds(10))) {
            assertThatThrownBy(() -> reader.get("/worker/attempt_0/cohort/store", Duration.ofMillis(500)))
                    .isInstanceOf(GlooConnectException.class)
                    .hasMessageContaining("rank 0 did not post its store's address")
                    .hasMessageContaining("/worker/attempt_0/cohort/store");
        } finally {
            server.close();
        }
    }

    @Test
    void noStoreAtAllIsNamedWithinTheTimeout() {
        int port = JvmWorkers.freePort();
        long start = System.nanoTime();
        assertThatThrownBy(() -> AgentStore.connect("127.0.0.1", port, Duration.ofSeconds(2)))
                .isInstanceOf(GlooConnectException.class)
                .hasMessageContaining("could not reach the launcher's TCP store at 127.0.0.1:" + port);
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(10));
    }

    /** Rank 0 posts through one connection; another rank reads through its own. */
    private static void roundTrip(int port) {
        try (AgentStore writer = AgentStore.connect("127.0.0.1", port, Duration.ofSeconds(20));
                AgentStore reader = AgentStore.connect("127.0.0.1", port, Duration.ofSeconds(20))) {
            writer.set("/worker/attempt_0/cohort/store", "10.1.2.3 4567");
            assertThat(reader.get("/worker/attempt_0/cohort/store", Duration.ofSeconds(10)))
                    .isEqualTo("10.1.2.3 4567");
        }
    }
}
