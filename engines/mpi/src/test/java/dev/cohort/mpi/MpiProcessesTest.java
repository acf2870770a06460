package dev.cohort.mpi;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.testkit.EngineWorker;
import dev.cohort.testkit.JvmWorkers;
import dev.cohort.testkit.JvmWorkers.Result;
import dev.cohort.testkit.MpiRun;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The conformance suite on the mpi engine, its ranks started by Open MPI's mpirun (1 to 8
 * processes; the 4 Mi cases up to 3; 5 with the consistency check off), and one process started without mpirun (MPI's singleton).
 */
class MpiProcessesTest {

    @TempDir
    Path tmp;

    @ParameterizedTest(name = "{0} rank(s), {1} {2}")
    @CsvSource({
        "1, conformance, --mpi-consistency-check",
        "2, conformance, --mpi-consistency-check",
        "3, conformance, --mpi-consistency-check",
        "5, conformance-small, --no-mpi-consistency-check",
        "8, conformance-small, --mpi-consistency-check",
        "4, subgroups, --mpi-consistency-check"
    })
    @Timeout(value = 240, unit = TimeUnit.SECONDS)
    void theSuitePassesUnderMpirun(int ranks, String mode, String check) {
        MpiRun.Job job = MpiRun.run(
                tmp,
                ranks,
                EngineWorker.class,
                List.of(mode, "--distributed-backend", "mpi", check),
                Duration.ofSeconds(220));
        assertThat(job.exitCode()).as(job.output()).isZero();
        for (int r = 0; r < ranks; r++) {
            String topology = "TOPOLOGY Topology[rank=" + ranks(r, ranks);
            assertThat(job.linesOf(r))
                    .as(job.output())
                    .contains("BACKEND mpi", topology)
                    .anyMatch(l -> l.startsWith("OK rank "));
        }
    }

    private static String ranks(int r, int ranks) {
        return r + ", worldSize=" + ranks + ", localRank=" + r + ", localWorldSize=" + ranks + ", nodeRank=0]";
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void underMpirunWithNoBackendNamedAndNoRendezvousAddressAutoTakesMpi() {
        MpiRun.Job job = MpiRun.run(tmp, 2, EngineWorker.class, List.of("conformance-small"), Duration.ofSeconds(100));
        assertThat(job.exitCode()).as(job.output()).isZero();
        assertThat(job.output())
                .contains("backend auto (from WORLD_SIZE=2, no backend named): mpi (2 workers and no "
                        + "rendezvous address");
        assertThat(job.linesOf(1)).as(job.output()).contains("BACKEND mpi");
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void oneProcessWithoutMpirunIsAJobOfOne() {
        List<String> cmd = JvmWorkers.javaCommand(
                EngineWorker.class,
                List.of("--enable-native-access=ALL-UNNAMED"),
                List.of("conformance-small", "--distributed-backend", "mpi"));
        Result alone = JvmWorkers.run(1, r -> cmd, r -> Map.of(), tmp.resolve("alone"), Duration.ofSeconds(50))
                .get(0);
        assertThat(alone.exitCode()).as(alone.output()).isZero();
        assertThat(alone.output())
                .contains("TOPOLOGY Topology[rank=0, worldSize=1, localRank=0, localWorldSize=1, " + "nodeRank=0]")
                .contains("OK rank 0");
    }
}
