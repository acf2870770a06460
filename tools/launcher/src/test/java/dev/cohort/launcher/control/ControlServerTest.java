package dev.cohort.launcher.control;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.runtime.auth.JobSecret;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Node 0's control channel against connections that never say HELLO. */
@Timeout(30)
class ControlServerTest {

    @Test
    void beyondTheUnprovenLimitAConnectionIsClosedAtOnce() throws Exception {
        Channel channel =
                new Channel("127.0.0.1", 0, Duration.ofSeconds(60), Optional.of(JobSecret.of("a test job's secret")));
        List<Socket> silent = new ArrayList<>();
        try (ControlServer server = new ControlServer(channel, "run", 2, 2, 0, 0)) {
            InetSocketAddress at = new InetSocketAddress("127.0.0.1", server.port());
            for (int i = 0; i < ControlServer.UNPROVEN; i++) {
                Socket s = new Socket();
                s.connect(at, 2_000);
                silent.add(s);
            }
            try (Socket one = new Socket()) {
                one.connect(at, 2_000);
                one.setSoTimeout(5_000); // the handshake's own limit is 10 s: closed before it
                assertThat(one.getInputStream().read()).as("end of stream").isEqualTo(-1);
            }
        } finally {
            for (Socket s : silent) {
                s.close();
            }
        }
    }
}
