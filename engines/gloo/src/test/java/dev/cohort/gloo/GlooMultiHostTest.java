package dev.cohort.gloo;

import dev.cohort.testkit.TwoHosts;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** 2 hosts x 2 ranks: network namespaces joined by a veth pair, Gloo across them. */
class GlooMultiHostTest {

    @TempDir
    Path tmp;

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void ranksNodesLocalBarrierAndCollectivesAcrossTwoHosts() {
        TwoHosts.assertWorkersRunTwoByTwo(
                GlooWorker.class, List.of("conformance-small"), 29_400, tmp, Duration.ofSeconds(160));
    }
}
