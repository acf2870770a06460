package dev.cohort.gloo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.testkit.JvmWorkers;
import dev.cohort.testkit.JvmWorkers.Result;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The conformance suite on Gloo with one JVM per rank, rendezvous through the environment. */
class GlooProcessesTest {

    @TempDir
    Path tmp;

    static Map<String, String> env(int rank, int world, int port, int localWorld) {
        Map<String, String> env = JvmWorkers.launchEnv("127.0.0.1", port, rank, world, localWorld);
        env.put("COHORT_RUN_ID", "test");
        return env;
    }

    static void assertAllOk(List<Result> results) {
        JvmWorkers.assertAllOk(results);
    }

    /**
     * Runs {@code world} workers in {@code mode} ({@code localWorld} per simulated node) on a
     * fresh port within {@code seconds}, and checks that every one reported OK.
     */
    private List<Result> runAllOk(int world, int localWorld, List<String> jvmArgs, String mode, int seconds) {
        int port = JvmWorkers.freePort();
        List<Result> results = JvmWorkers.run(
                world,
                r -> JvmWorkers.javaCommand(GlooWorker.class, jvmArgs, List.of(mode)),
                r -> env(r, world, port, localWorld),
                tmp,
                Duration.ofSeconds(seconds));
        assertAllOk(results);
        return results;
    }

    /**
     * By default a waiting rank polls its connections where every rank has a CPU (world 2 here)
     * and sleeps at once where not (3 and 4 here): each world here the other way (GlooConformanceTest
     * runs the defaults). And in 1 MiB mesh messages: the suite's 16 MiB allreduces, broadcasts,
     * allgathers and reduce-scatters travel as 16 messages each (with 3 ranks allreduce and
     * broadcast that large go through Gloo).
     */
    @ParameterizedTest(name = "world {0}, polling {1} us, 1 MiB messages")
    @CsvSource({"2, 0", "3, 50"})
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void theSuitePassesWithPollingTheOtherWayAndLargeCallsSplitIntoMeshMessages(int world, int spinMicros) {
        runAllOk(
                world,
                world,
                List.of("-Dcohort.test.glooSpinUs=" + spinMicros, "-Dcohort.gloo.meshMessageBytes=1048576"),
                "conformance",
                280);
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void twoSimulatedNodesGetTheirOwnNodeGroups() {
        List<Result> results = runAllOk(4, 2, List.of(), "smoke", 100);
        assertThat(results.get(1).output()).contains("NODE 0 RANKS [0, 1]");
        assertThat(results.get(3).output()).contains("NODE 1 RANKS [2, 3]");
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void notesLeftInTheStoreReachEveryRank() {
        runAllOk(3, 3, List.of(), "notes", 100);
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void notesGiveUpAtOnceOnceTheStoreIsGone() {
        List<Result> results = runAllOk(2, 2, List.of(), "notes-store-gone", 100);
        Matcher gone = Pattern.compile("NOTES GONE (\\d+) (\\d+) (\\d+)")
                .matcher(results.get(1).output());
        assertThat(gone.find()).as(JvmWorkers.describe(results)).isTrue();
        // The first call waits at most the store's 2 s; after it failed, the others do not wait.
        assertThat(Long.parseLong(gone.group(1)))
                .as(JvmWorkers.describe(results))
                .isLessThan(3000);
        assertThat(Long.parseLong(gone.group(2)))
                .as(JvmWorkers.describe(results))
                .isLessThan(100);
        assertThat(Long.parseLong(gone.group(3)))
                .as(JvmWorkers.describe(results))
                .isLessThan(100);
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void fileRendezvousOnASharedFilesystem() {
        Path storeFile = tmp.resolve("store");
        List<Result> results = JvmWorkers.run(
                3,
                r -> JvmWorkers.javaCommand(
                        GlooWorker.class, List.of(), List.of("conformance-small", "file://" + storeFile)),
                r -> Map.of("RANK", Integer.toString(r), "WORLD_SIZE", "3", "GLOO_SOCKET_IFNAME", "lo"),
                tmp,
                Duration.ofSeconds(100));
        assertAllOk(results);
    }

    @Test
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void workersLoadingLibtorchIntoAnEmptyCacheAtOnceDoNotCrash() throws Exception {
        Path cache = Files.createDirectory(tmp.resolve("javacpp-cache"));
        runAllOk(2, 2, List.of("-Dorg.bytedeco.javacpp.cachedir=" + cache), "smoke", 280);
    }
}
