package dev.cohort.gloo;

import dev.cohort.testkit.JvmWorkers;
import dev.cohort.testkit.TwoHosts;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
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
        try (TwoHosts hosts = TwoHosts.createOrSkip()) {
            List<JvmWorkers.Result> results = hosts.runTwoByTwo(
                    JvmWorkers.javaCommand(GlooWorker.class, List.of(), List.of("conformance-small")),
                    TwoHosts.port(29_400),
                    Map.of(),
                    tmp,
                    Duration.ofSeconds(160));
            GlooProcessesTest.assertAllOk(results);
            TwoHosts.assertTwoByTwo(results);
        }
    }
}
