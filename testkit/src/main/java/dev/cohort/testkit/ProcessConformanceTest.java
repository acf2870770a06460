package dev.cohort.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.testkit.JvmWorkers.Result;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The conformance suite on an engine with one JVM per rank ({@link EngineWorker}), the ranks
 * meeting through the launch environment as under {@code ./cohort run}. An engine's test
 * subclasses it in a few lines: its name, what its JVMs and command lines need, at which world
 * sizes to run the whole suite and the small one, how many ranks a simulated host has, and what
 * must hold after a run.
 */
public abstract class ProcessConformanceTest {

    @TempDir
    protected Path tmp;

    /** The backend's name, as {@code --distributed-backend} takes it. */
    protected abstract String backend();

    /** JVM options every worker needs (e.g. the Vector API module). */
    protected List<String> jvmArgs() {
        return List.of();
    }

    /** The engine's options on every worker's command line (e.g. timeouts). */
    protected List<String> options() {
        return List.of();
    }

    /** World sizes that run the whole suite, 4 Mi cases included. */
    protected int[] fullWorlds() {
        return new int[] {2};
    }

    /** World sizes that run the suite without its 4 Mi cases. */
    protected int[] smallWorlds() {
        return new int[0];
    }

    /** Ranks per simulated host in a world of {@code world} (all on one host by default). */
    protected int ranksPerHost(int world) {
        return world;
    }

    /** What must hold once run {@code runId}'s workers ended (e.g. nothing left in /dev/shm). */
    protected void afterRun(String runId) {
    }

    /** The launch environment of {@code rank}: hosts of {@link #ranksPerHost} consecutive ranks. */
    protected Map<String, String> env(String runId, int port, int rank, int world) {
        int perHost = ranksPerHost(world);
        Map<String, String> env = new HashMap<>();
        env.put("MASTER_ADDR", "127.0.0.1");
        env.put("MASTER_PORT", Integer.toString(port));
        env.put("RANK", Integer.toString(rank));
        env.put("WORLD_SIZE", Integer.toString(world));
        env.put("LOCAL_RANK", Integer.toString(rank % perHost));
        env.put("LOCAL_WORLD_SIZE", Integer.toString(perHost));
        env.put("GROUP_RANK", Integer.toString(rank / perHost));
        env.put("GROUP_WORLD_SIZE", Integer.toString((world + perHost - 1) / perHost));
        env.put("COHORT_RUN_ID", runId);
        return env;
    }

    @TestFactory
    @Timeout(value = 900)
    List<DynamicTest> conformanceSuiteAcrossProcesses() {
        List<DynamicTest> tests = new ArrayList<>();
        for (int world : fullWorlds()) {
            tests.add(DynamicTest.dynamicTest("whole suite, world " + world, () -> run("conformance", world, 240)));
        }
        for (int world : smallWorlds()) {
            tests.add(DynamicTest.dynamicTest("small suite, world " + world, () -> run("conformance-small", world, 160)));
        }
        return tests;
    }

    private void run(String mode, int world, int seconds) {
        String runId = backend() + "-" + mode + "-" + world + "-" + ProcessHandle.current().pid() + "-"
                + System.nanoTime() % 100_000;
        int port = JvmWorkers.freePort();
        List<String> args = new ArrayList<>(List.of(mode, "--distributed-backend", backend()));
        args.addAll(options());
        List<Result> results = JvmWorkers.run(world, r -> JvmWorkers.javaCommand(EngineWorker.class, jvmArgs(), args),
                r -> env(runId, port, r, world), tmp.resolve(runId), Duration.ofSeconds(seconds));
        JvmWorkers.assertAllOk(results, "BACKEND " + backend());
        int perHost = ranksPerHost(world);
        for (Result r : results) {
            int host = r.rank() / perHost;
            List<Integer> hostRanks = IntStream.range(host * perHost, Math.min(world, (host + 1) * perHost)).boxed().toList();
            assertThat(r.output()).as(JvmWorkers.describe(results))
                    .contains("TOPOLOGY Topology[rank=" + r.rank() + ", worldSize=" + world)
                    .contains("NODE " + host + " RANKS " + hostRanks);
        }
        afterRun(runId);
    }
}
