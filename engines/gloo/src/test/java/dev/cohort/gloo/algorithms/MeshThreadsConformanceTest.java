package dev.cohort.gloo.algorithms;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.gloo.transport.PeerMesh;
import dev.cohort.runtime.store.InMemoryStore;
import dev.cohort.runtime.store.PrefixStore;
import dev.cohort.runtime.store.Store;
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

/** The mesh algorithms, ranks as threads over an in-memory store, through the engine-neutral suite. */
class MeshThreadsConformanceTest {

    private static final Duration TIMEOUT = Duration.ofSeconds(60);

    @ParameterizedTest(name = "world {0}")
    @ValueSource(ints = {1, 2, 3, 4})
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void passesTheConformanceSuite(int world) throws Exception {
        Store store = new PrefixStore("peer-mesh/", new InMemoryStore());
        ExecutorService ranks = Executors.newFixedThreadPool(world);
        try {
            List<Future<Integer>> checks = new ArrayList<>();
            for (int r = 0; r < world; r++) {
                int rank = r;
                checks.add(ranks.submit(() -> {
                    PeerMesh mesh = PeerMesh.connect(store, rank, world, MeshCollectives.HEADER_WORDS,
                            InetAddress.getLoopbackAddress(), TIMEOUT, Duration.ZERO, "rank " + rank + " of " + world,
                            dev.cohort.runtime.RankNames.PLAIN);
                    try (ProcessGroup group = new MeshThreadsGroup(mesh, rank, world, TIMEOUT)) {
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
