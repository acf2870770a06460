package dev.cohort.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.cohort.examples.FashionMnistTrainerTest.TimedConsole;
import dev.cohort.launcher.LaunchOptions;
import dev.cohort.launcher.LaunchResult;
import dev.cohort.runtime.flight.FlightRecorder;
import dev.cohort.runtime.flight.FlightRecords;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A rank stopped (SIGSTOP) mid-training on each engine: the other rank's collective times out,
 * and the launcher's failure message says, from the ranks' flight records, which rank stopped
 * where and what the other waited in; the stall report before the timeout says so too.
 */
class FlightRecordTest {

    private static final int TIMEOUT_S = 3;

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"tcp", "gloo", "shm", "hier", "mpi"})
    @Timeout(120)
    void aStoppedRankIsNamedWithWhereItStopped(String engine, @TempDir Path dir) throws Exception {
        RealData.assumeInstalled();
        assumeTrue(
                List.of("tcp", "gloo").contains(engine) || Runtime.version().feature() >= 22,
                "the " + engine + " engine needs JDK 22");
        assumeTrue(
                !engine.equals("mpi") || Files.isExecutable(Path.of("/usr/bin/mpirun")),
                "Open MPI is not installed (apt-get install openmpi-bin)");
        Path records = dir.resolve("flight");
        LaunchOptions options = LaunchOptions.builder()
                .nprocPerNode(2)
                .masterPort(0)
                .grace(java.time.Duration.ofSeconds(1))
                .addEnvironment(FlightRecorder.ENV_DIR, records.toString())
                .build();
        TimedConsole console = new TimedConsole();
        // Its own thread: the launcher learns of exits through the common pool, which may have one thread.
        java.util.concurrent.FutureTask<LaunchResult> run = new java.util.concurrent.FutureTask<>(() -> {
            try {
                return FashionMnistTrainerTest.launch(
                        console,
                        options,
                        List.of(
                                "--distributed-backend",
                                engine,
                                "--" + engine + "-timeout",
                                Integer.toString(TIMEOUT_S),
                                "--" + engine + "-stall-seconds",
                                "1",
                                "--epochs",
                                "20"));
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        Thread launcher = new Thread(run, "launcher");
        launcher.setDaemon(true);
        launcher.start();
        long pid = stopWhenTraining(records.resolve(FlightRecorder.fileName(1)), run);
        LaunchResult result = run.get(90, TimeUnit.SECONDS);
        String log = console.text();
        assertThat(result.exitCode()).as(log).isNotZero();
        String report = log.substring(log.indexOf("flight records (" + records + "): "));
        if (engine.equals("mpi")) {
            assertThat(report)
                    .as(log)
                    .containsPattern(
                            "(ranks 0, 1 (wait|failed) in|rank [01] (failed in|waits in|completed)) allreduce #\\d+");
            // MPI cannot cancel a timed-out call: the rank that times out aborts the job (it may not
            // have marked the call failed yet) and mpirun ends every rank, continuing the stopped one
            // first (which may then time out too): the report places both, in whichever state.
            return;
        }
        assertThat(report)
                .as(log)
                .containsPattern("rank 0 failed in allreduce #\\d+ \\(.+\\) after \\d+ s")
                .containsPattern("rank 1 (completed allreduce #\\d+ \\(.+\\) and issued nothing since|waits in "
                        + "allreduce #\\d+ \\(.+\\) for)")
                .contains("(its process " + pid + " is stopped)");
        if (List.of("tcp", "gloo", "shm", "hier").contains(engine)) {
            // The stall report, a second before the timeout, says where the ranks stand too.
            assertThat(log)
                    .as(log)
                    .containsPattern("\\[rank 0\\] .*allreduce #\\d+ .*has waited 1 s; .*; flight records: .*rank 1"
                            + "('s process " + pid + " is stopped| .*\\(its process " + pid + " is stopped\\))");
        }
    }

    /** Waits until rank 1 has recorded some training's collectives, stops it, and returns its pid. */
    private static long stopWhenTraining(Path ring, java.util.concurrent.Future<LaunchResult> run) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline && !run.isDone()) {
            if (Files.exists(ring)) {
                try {
                    FlightRecords.Ring r = FlightRecords.read(ring);
                    if (r.written() >= 30) {
                        new ProcessBuilder("kill", "-STOP", Long.toString(r.pid()))
                                .start()
                                .waitFor();
                        return r.pid();
                    }
                } catch (IllegalArgumentException e) {
                    // Being made.
                }
            }
            Thread.sleep(100);
        }
        throw new AssertionError(
                "rank 1 recorded no training within 60 s; the run " + (run.isDone() ? "ended" : "runs"));
    }
}
