package dev.cohort.tcp.algorithms;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.runtime.store.InMemoryStore;
import dev.cohort.runtime.store.PrefixStore;
import dev.cohort.runtime.store.Store;
import dev.cohort.tcp.transport.MeshConnector;
import dev.cohort.tcp.transport.MeshSpec;
import dev.cohort.tcp.transport.PeerMesh;
import dev.cohort.testkit.ConformanceSuite;
import java.net.InetAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The mesh algorithms, ranks as threads over an in-memory store, through the engine-neutral suite:
 * allreduce as one exchange of whole inputs, and as a reduce-scatter then an allgather (for every
 * size, down to blocks of no elements).
 */
class MeshThreadsConformanceTest {

    private static final Duration TIMEOUT = Duration.ofSeconds(60);

    @ParameterizedTest(name = "world {0}, allreduce as one exchange of whole inputs")
    @ValueSource(ints = {1, 2, 3, 4})
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void passesTheConformanceSuite(int world) throws Exception {
        runSuite(world, Long.MAX_VALUE);
    }

    @ParameterizedTest(name = "world {0}, allreduce as a reduce-scatter then an allgather, from 0 bytes")
    @ValueSource(ints = {2, 3, 4})
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void passesTheConformanceSuiteInBlocks(int world) throws Exception {
        runSuite(world, 0);
    }

    private static void runSuite(int world, long blocksFromBytes) throws Exception {
        Store store = new PrefixStore("peer-mesh/", new InMemoryStore());
        ExecutorService ranks = Executors.newFixedThreadPool(world);
        try {
            List<Future<Integer>> checks = new ArrayList<>();
            for (int r = 0; r < world; r++) {
                int rank = r;
                checks.add(ranks.submit(() -> {
                    PeerMesh mesh = MeshConnector.connect(
                            store,
                            InetAddress.getLoopbackAddress(),
                            new MeshSpec(
                                    rank,
                                    world,
                                    MeshCollectives.HEADER_WORDS,
                                    TIMEOUT,
                                    Duration.ZERO,
                                    "rank " + rank + " of " + world,
                                    dev.cohort.runtime.RankNames.PLAIN,
                                    java.util.Optional.of(
                                            dev.cohort.runtime.auth.JobSecret.of("mesh conformance secret"))));
                    try (ProcessGroup group = new MeshThreadsGroup(mesh, rank, world, TIMEOUT, blocksFromBytes)) {
                        return ConformanceSuite.run(group);
                    }
                }));
            }
            for (Future<Integer> c : checks) {
                assertThat(c.get(170, TimeUnit.SECONDS)).isGreaterThan(10_000);
            }
        } finally {
            ranks.shutdownNow();
        }
    }
}
