package dev.cohort.tcp;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.testkit.EngineWorker;
import dev.cohort.testkit.JvmWorkers;
import dev.cohort.testkit.JvmWorkers.Result;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The tcp engine as a plain launcher starts it: only RANK and WORLD_SIZE given, the ranks learn
 * their host layout when they meet; and no native library beyond the JDK's and the system's is
 * loaded (so the engine runs beside another framework's libtorch).
 */
class TcpLearnedLayoutTest {

    @TempDir
    Path tmp;

    /** Runs {@code main} with {@code args} as {@code world} ranks on this host, as a plain launcher starts them. */
    private List<Result> launch(int world, Class<?> main, List<String> args) {
        int port = JvmWorkers.freePort();
        return JvmWorkers.run(
                world,
                r -> JvmWorkers.javaCommand(main, List.of(), args),
                r -> JvmWorkers.launchEnv("127.0.0.1", port, r, world),
                tmp,
                Duration.ofSeconds(100));
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void ranksOfOneHostFindEachOther() {
        List<Result> results = launch(
                3,
                EngineWorker.class,
                List.of("conformance-small", "--distributed-backend", "tcp", "--tcp-timeout", "60"));
        JvmWorkers.assertAllOk(results, "BACKEND tcp");
        assertThat(results.get(0).output())
                .contains("host layout learned at rendezvous: 1 host(s); rank 0's holds 3 of the 3 ranks");
        assertThat(results.get(2).output())
                .contains("TOPOLOGY Topology[rank=2, worldSize=3, localRank=2, localWorldSize=3, nodeRank=0]");
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void loadsNoNativeLibrary() {
        List<Result> results = launch(2, NativeFreeWorker.class, List.of());
        for (Result r : results) {
            assertThat(r.exitCode()).as(JvmWorkers.describe(results)).isZero();
            assertThat(r.output())
                    .as(JvmWorkers.describe(results))
                    .contains("OK")
                    .doesNotContain("NATIVE");
        }
    }
}
