package dev.cohort.hier;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.runtime.SharedMemoryFiles;
import dev.cohort.testkit.JvmWorkers;
import dev.cohort.testkit.JvmWorkers.Result;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The conformance suite on hier with one JVM per rank on this machine, the hosts faked through
 * the launch environment (2 hosts x 2 ranks, contiguous or interleaved), through
 * {@code --hier-ranks-per-host} (with gloo or tcp between them), or a single host.
 */
class HierProcessesTest {

    /** What the shm engine needs in a worker JVM. */
    static final List<String> JVM_ARGS =
            List.of("--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED");

    @TempDir
    Path tmp;

    /** The launch environment of rank r: host {@code hostOf.apply(r)}, whose ranks count up by global rank. */
    static Map<String, String> env(String runId, int port, int rank, int world, int perHost, int host, int local) {
        Map<String, String> env = new HashMap<>();
        env.put("MASTER_ADDR", "127.0.0.1");
        env.put("MASTER_PORT", Integer.toString(port));
        env.put("RANK", Integer.toString(rank));
        env.put("WORLD_SIZE", Integer.toString(world));
        env.put("LOCAL_RANK", Integer.toString(local));
        env.put("LOCAL_WORLD_SIZE", Integer.toString(perHost));
        env.put("GROUP_RANK", Integer.toString(host));
        env.put("COHORT_RUN_ID", runId);
        return env;
    }

    static String runId(String what) {
        return what + "-" + ProcessHandle.current().pid() + "-" + System.nanoTime() % 100_000;
    }

    /** The worker's command: the backend chosen by name on its command line, timeouts 60 s unless {@code options} say. */
    static List<String> command(String mode, String... options) {
        List<String> args = new ArrayList<>(List.of(mode, "--distributed-backend", "hier"));
        args.addAll(List.of(options));
        for (String option : List.of("--hier-timeout", "--hier-connect-timeout")) {
            if (!args.contains(option)) {
                args.addAll(List.of(option, "60"));
            }
        }
        return JvmWorkers.javaCommand(HierWorker.class, JVM_ARGS, args);
    }

    static void assertAllOk(List<Result> results) {
        JvmWorkers.assertAllOk(results, "BACKEND hier");
    }

    /** The mapping files of {@code runId} still in /dev/shm. */
    static List<Path> leftovers(String runId) {
        return SharedMemoryFiles.leftovers(runId);
    }

    /** The launch environment of rank {@code rank} of run {@code run}, rank 0's store at {@code port}. */
    @FunctionalInterface
    interface LaunchEnv {
        Map<String, String> of(String run, int port, int rank);
    }

    /**
     * Runs {@code world} workers of {@code command} on a fresh port within 180 s, rank r with the
     * environment {@code env.of(run, port, r)} (the run named from {@code what}), and checks that
     * every one reported OK and that the run left nothing in /dev/shm.
     */
    private List<Result> runAllOk(String what, int world, List<String> command, LaunchEnv env) {
        String run = runId(what);
        int port = JvmWorkers.freePort();
        List<Result> results =
                JvmWorkers.run(world, r -> command, r -> env.of(run, port, r), tmp, Duration.ofSeconds(180));
        assertAllOk(results);
        assertThat(leftovers(run)).isEmpty();
        return results;
    }

    @ParameterizedTest(name = "{0} between hosts")
    @ValueSource(strings = {"gloo", "tcp"})
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void theGroupsWithinAndBetweenHostsRunNoEngineThreadsOfTheirOwn(String between) {
        // hier awaits each call it makes on them: only hier's own queue has an engine thread.
        List<Result> results = runAllOk(
                "threads-" + between,
                4,
                command("engine-threads", "--hier-between", between),
                (run, port, r) -> env(run, port, r, 4, 2, r / 2, r % 2));
        for (int r = 0; r < 4; r++) {
            assertThat(results.get(r).output()).contains("ENGINE THREADS [cohort-hier-rank-" + r + "]");
        }
    }

    @Test
    @Timeout(value = 200, unit = TimeUnit.SECONDS)
    void hostsWhoseRanksAreNotContiguous() {
        // Host 0 runs ranks 0 and 2, host 1 ranks 1 and 3: allgathers must still come out in global rank order.
        List<Result> results = runAllOk(
                "interleaved",
                4,
                command("conformance-small"),
                (run, port, r) -> env(run, port, r, 4, 2, r % 2, r / 2));
        assertThat(results.get(2).output()).contains("NODE 0 RANKS [0, 2]");
        assertThat(results.get(1).output()).contains("NODE 1 RANKS [1, 3]");
    }

    @Test
    @Timeout(value = 200, unit = TimeUnit.SECONDS)
    void hostsThatRunDifferentNumbersOfRanks() {
        // Host 0 runs rank 1 alone, host 1 ranks 0 and 2 (GROUP_WORLD_SIZE=2 says how many hosts):
        // uneven and interleaved at once; reduce-scatter takes its general path.
        int[] host = {1, 0, 1};
        int[] local = {0, 0, 1};
        List<Result> results = runAllOk("uneven", 3, command("conformance-small"), (run, port, r) -> {
            Map<String, String> env = env(run, port, r, 3, host[r] == 0 ? 1 : 2, host[r], local[r]);
            env.put("GROUP_WORLD_SIZE", "2");
            return env;
        });
        assertThat(results.get(1).output()).contains("NODE 0 RANKS [1]");
        assertThat(results.get(2).output())
                .contains("NODE 1 RANKS [0, 2]")
                .contains("TOPOLOGY Topology[rank=2, worldSize=3, localRank=1, localWorldSize=2, nodeRank=1]");
    }

    @ParameterizedTest(name = "auto between hosts, cohort-gloo on the class path: {0}")
    @ValueSource(booleans = {true, false})
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void hostsSimulatedWithRanksPerHostOnALaunchOfOneNode(boolean withGloo) {
        // 2 simulated hosts x 2 ranks, the small suite, the default engine between hosts: Gloo where
        // cohort-gloo is on the class path, else Cohort's TCP mesh, without cohort-gloo, JavaCPP or
        // libtorch (hier's dependency on gloo is optional); the 4 Mi cases with tcp between hosts run
        // across namespaced hosts in HierMultiHostTest.
        List<String> command = command("conformance-small", "--hier-ranks-per-host", "2");
        if (!withGloo) {
            int cp = command.indexOf("-cp") + 1;
            command.set(cp, withoutLibtorch(command.get(cp)));
        }
        List<Result> results =
                runAllOk("simulated-" + withGloo, 4, command, (run, port, r) -> env(run, port, r, 4, 4, 0, r));
        assertThat(results.get(3).output())
                .contains("TOPOLOGY Topology[rank=3, worldSize=4, localRank=1, localWorldSize=2, nodeRank=1]")
                .contains("NODE 1 RANKS [2, 3]");
        assertThat(results.get(0).output())
                .contains("hier: 2 hosts, shared memory within each, " + (withGloo ? "gloo" : "tcp")
                        + " between their leaders");
    }

    /** {@code classPath} without cohort-gloo and the JavaCPP jars (libtorch, OpenBLAS). */
    private static String withoutLibtorch(String classPath) {
        List<String> kept = new ArrayList<>();
        for (String entry : classPath.split(java.io.File.pathSeparator)) {
            if (!entry.matches(".*(cohort-gloo|engines/gloo|cohort-libtorch|integrations/libtorch|bytedeco).*")) {
                kept.add(entry);
            }
        }
        assertThat(kept).hasSizeLessThan(classPath.split(java.io.File.pathSeparator).length);
        return String.join(java.io.File.pathSeparator, kept);
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"reduce-beside-allreduce", "gathers-to-two-roots"})
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void composedCallsThatDifferAcrossHostsFailOnEveryRank(String mode) {
        // 2 simulated hosts x 2 ranks: host 0's ranks issue one composed call, host 1's another
        // whose parts look alike; every rank fails, none goes on with mixed data.
        String run = runId(mode);
        int port = JvmWorkers.freePort();
        List<Result> results = JvmWorkers.run(
                4,
                r -> command(mode, "--hier-ranks-per-host", "2", "--hier-between", "tcp"),
                r -> env(run, port, r, 4, 4, 0, r),
                tmp,
                Duration.ofSeconds(100));
        for (Result r : results) {
            assertThat(r.output()).as("rank " + r.rank()).contains("MISMATCH").doesNotContain("UNDETECTED");
        }
        if (mode.equals("gathers-to-two-roots")) {
            // Every host's ranks see every rank's call.
            for (Result r : results) {
                assertThat(r.output())
                        .as("rank " + r.rank())
                        .contains("MISMATCH CollectiveMismatchException")
                        .contains("the ranks issued different collectives: ranks [0, 1]: gather float32[1] root=0")
                        .contains("ranks [2, 3]: gather float32[1] root=1");
            }
        }
        assertThat(leftovers(run)).isEmpty();
    }

    @Test
    @Timeout(value = 200, unit = TimeUnit.SECONDS)
    void oneHostNeedsNoLeadersGroup() {
        List<Result> results =
                runAllOk("onehost", 3, command("conformance-small"), (run, port, r) -> env(run, port, r, 3, 3, 0, r));
        assertThat(results.get(1).output()).contains("NODE 0 RANKS [0, 1, 2]");
    }
}
