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

    /** A node's one attempt to connect; attempts repeat every {@link #RETRY_MILLIS} until the join timeout. */
    static final int CONNECT_MILLIS = 2000;

    static final int RETRY_MILLIS = 250;

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
