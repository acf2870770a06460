package dev.cohort.launcher.control;

import dev.cohort.runtime.auth.JobSecret;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * Node 0's control channel as both ends know it: where it listens ({@code --master-addr} and the
 * control port), how long nodes wait for each other, and the secret each connection proves.
 */
public record Channel(String host, int port, Duration joinTimeout, Optional<JobSecret> secret) {

    public Channel {
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(joinTimeout, "joinTimeout");
        Objects.requireNonNull(secret, "secret");
    }

    /** {@code host:port}, for messages. */
    String where() {
        return host + ":" + port;
    }
}
