package dev.cohort.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.testkit.JvmWorkers.Result;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.stream.IntStream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The conformance suite on an engine with one JVM per rank ({@link EngineWorker}), the ranks
 * meeting through the launch environment as under {@code ./cohort run}. An engine's test is a
 * subclass whose constructor describes the engine ({@link Engine}): its name, what its JVMs and
 * command lines need, at which world sizes to run the whole suite and the small one, how many
 * ranks a simulated host has, and what must hold after a run.
 */
public abstract class ProcessConformanceTest {

    /** An engine as the conformance runs need it. */
    public static final class Engine {
        private final String backend;
        private List<String> jvmArgs = List.of();
        private List<String> options = List.of();
        private int[] whole = {2};
        private int[] small = {};
        private int ranksPerHost;
        private Consumer<String> afterRun = runId -> {};
        private int subgroupWorld = 4;
        private int strangersWorld;
        private java.util.regex.Pattern strangersRefusedBy;

        private Engine(String backend) {
            this.backend = Objects.requireNonNull(backend, "backend");
        }

        /** The engine chosen with {@code --distributed-backend backend}. */
        public static Engine named(String backend) {
            return new Engine(backend);
        }

        /** JVM options every worker needs (e.g. the Vector API module). */
        public Engine jvmArgs(List<String> args) {
            this.jvmArgs = List.copyOf(args);
            return this;
        }

        /** The engine's options on every worker's command line (e.g. timeouts). */
        public Engine options(String... options) {
            this.options = List.of(options);
            return this;
        }

        /** World sizes that run the whole suite, 4 Mi cases included (default: 2). */
        public Engine wholeSuiteAt(int... worlds) {
            this.whole = worlds.clone();
            return this;
        }

        /** World sizes that run the suite without its 4 Mi cases (default: none). */
        public Engine smallSuiteAt(int... worlds) {
            this.small = worlds.clone();
            return this;
        }

        /** Ranks per simulated host (default: all on one host). */
        public Engine ranksPerHost(int ranks) {
            this.ranksPerHost = ranks;
            return this;
        }

        /** World size of the subgroup suite (default 4; 0: none). */
        public Engine subgroupsAt(int world) {
            this.subgroupWorld = world;
            return this;
        }

        /**
         * World size of a run with a job secret while {@link Strangers} visit every port the
         * workers listen on (default 0: none). Only for engines all of whose ports are Cohort's.
         */
        public Engine strangersAt(int world) {
            this.strangersWorld = world;
            return this;
        }

        /**
         * A refusal that the run among strangers must log (a port of the engine's own that must
         * have been visited), matched against each line of the workers' output.
         */
        public Engine strangersRefusedBy(String regex) {
            this.strangersRefusedBy = java.util.regex.Pattern.compile(regex);
            return this;
        }

        /** What must hold once a run's workers ended, given its run id (e.g. nothing left in /dev/shm). */
        public Engine afterRun(Consumer<String> check) {
            this.afterRun = Objects.requireNonNull(check, "check");
            return this;
        }
    }

    @TempDir
    protected Path tmp;

    private final Engine engine;

    protected ProcessConformanceTest(Engine engine) {
        this.engine = engine;
    }

    @TestFactory
    @Timeout(value = 900)
    List<DynamicTest> conformanceSuiteAcrossProcesses() {
        List<DynamicTest> tests = new ArrayList<>();
        for (int world : engine.whole) {
            tests.add(DynamicTest.dynamicTest("whole suite, world " + world, () -> run("conformance", world, 240)));
        }
        for (int world : engine.small) {
            tests.add(
                    DynamicTest.dynamicTest("small suite, world " + world, () -> run("conformance-small", world, 160)));
        }
        if (engine.subgroupWorld > 0) {
            tests.add(DynamicTest.dynamicTest(
                    "subgroups and messages, world " + engine.subgroupWorld,
                    () -> run("subgroups", engine.subgroupWorld, 240)));
        }
        if (engine.strangersWorld > 0) {
            tests.add(DynamicTest.dynamicTest(
                    "strangers on every port, world " + engine.strangersWorld,
                    () -> runAmongStrangers(engine.strangersWorld, 240)));
        }
        return tests;
    }

    private int perHost(int world) {
        return engine.ranksPerHost > 0 ? engine.ranksPerHost : world;
    }

    /** The launch environment of {@code rank}: hosts of {@link Engine#ranksPerHost} consecutive ranks. */
    private Map<String, String> env(String runId, int port, int rank, int world) {
        int perHost = perHost(world);
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

    /**
     * The subgroup and message suites with a job secret, while strangers visit every port the
     * workers open: each visit is refused, the refusals are logged, and the job's results are right.
     */
    private void runAmongStrangers(int world, int seconds) throws InterruptedException {
        long seed = System.nanoTime();
        List<Strangers.Outcome> outcomes;
        try (Strangers strangers = Strangers.visitChildren(seed)) {
            List<Result> results =
                    run("subgroups", world, seconds, Map.of("COHORT_SECRET", "a test job's secret " + seed));
            outcomes = strangers.finish();
            if (engine.strangersRefusedBy != null) {
                assertThat(results.stream().flatMap(r -> r.output().lines()))
                        .as(JvmWorkers.describe(results))
                        .anyMatch(
                                line -> engine.strangersRefusedBy.matcher(line).find());
            }
        }
        Map<Integer, List<String>> byPort = Strangers.byPort(outcomes);
        assertThat(byPort).as("ports visited (seed %d): %s", seed, byPort).hasSizeGreaterThanOrEqualTo(world);
        assertThat(outcomes).as("visits (seed %d): %s", seed, byPort).allMatch(Strangers.Outcome::refused);
    }

    private void run(String mode, int world, int seconds) {
        run(mode, world, seconds, Map.of());
    }

    private List<Result> run(String mode, int world, int seconds, Map<String, String> extraEnv) {
        String runId = engine.backend + "-" + mode + "-" + world + "-"
                + ProcessHandle.current().pid() + "-" + System.nanoTime() % 100_000;
        int port = JvmWorkers.freePort();
        List<String> args = new ArrayList<>(List.of(mode, "--distributed-backend", engine.backend));
        args.addAll(engine.options);
        List<Result> results = JvmWorkers.run(
                world,
                r -> JvmWorkers.javaCommand(EngineWorker.class, engine.jvmArgs, args),
                r -> {
                    Map<String, String> env = env(runId, port, r, world);
                    env.putAll(extraEnv);
                    return env;
                },
                tmp.resolve(runId),
                Duration.ofSeconds(seconds));
        JvmWorkers.assertAllOk(results, "BACKEND " + engine.backend);
        if (!extraEnv.isEmpty()) {
            assertThat(results.stream().map(Result::output))
                    .as(JvmWorkers.describe(results))
                    .anyMatch(out -> out.contains("refused a connection from"));
        }
        int perHost = perHost(world);
        for (Result r : results) {
            int host = r.rank() / perHost;
            List<Integer> hostRanks = IntStream.range(host * perHost, Math.min(world, (host + 1) * perHost))
                    .boxed()
                    .toList();
            assertThat(r.output())
                    .as(JvmWorkers.describe(results))
                    .contains("TOPOLOGY Topology[rank=" + r.rank() + ", worldSize=" + world)
                    .contains("NODE " + host + " RANKS " + hostRanks);
        }
        engine.afterRun.accept(runId);
        return results;
    }
}
