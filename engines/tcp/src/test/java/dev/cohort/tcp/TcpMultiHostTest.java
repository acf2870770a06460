package dev.cohort.tcp;

import dev.cohort.testkit.EngineWorker;
import dev.cohort.testkit.TwoHosts;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * 2 hosts x 2 ranks: network namespaces joined by a veth pair, the tcp engine across them. (The
 * namespaces share this machine's host name and {@code /dev/shm}, so the launcher gives the layout,
 * as ./cohort run and torchrun do.)
 */
class TcpMultiHostTest {

    @TempDir
    Path tmp;

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void collectivesAcrossTwoHosts() {
        TwoHosts.assertWorkersRunTwoByTwo(
                EngineWorker.class,
                List.of("conformance-small", "--distributed-backend", "tcp", "--tcp-timeout", "60"),
                29_900,
                tmp,
                Duration.ofSeconds(160),
                "BACKEND tcp");
    }
}
