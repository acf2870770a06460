package dev.cohort.mpi;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.testkit.MpiRun;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Faults on the mpi engine, 2 ranks under mpirun, a collective timeout of 3 s: every failure is
 * named, none hangs.
 */
class MpiFailureTest {

    @TempDir
    Path tmp;

    private MpiRun.Job job(String mode, String... more) {
        List<String> args = new ArrayList<>(List.of(mode, "--distributed-backend", "mpi", "--mpi-timeout", "3"));
        args.addAll(List.of(more));
        return MpiRun.run(tmp, 2, MpiWorker.class, args, Duration.ofSeconds(100));
    }

    /** A job of {@code mode} that fails, ended by its timeout (3 s) well before its ranks would exit (a minute). */
    private MpiRun.Job failsWithin40Seconds(String mode, String... more) {
        long start = System.nanoTime();
        MpiRun.Job job = job(mode, more);
        assertThat(job.exitCode()).as(job.output()).isNotZero();
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(40));
        return job;
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void ranksThatIssueDifferentCallsAreBothToldEachOnesCall() {
        MpiRun.Job job = job("mismatch");
        assertThat(job.exitCode()).as(job.output()).isNotZero();
        for (int r = 0; r < 2; r++) {
            assertThat(job.textOf(r))
                    .as(job.output())
                    .contains("CollectiveMismatchException")
                    .containsPattern("ranks disagree on collective #[0-9]+:")
                    .contains("rank 0: allreduce float32[1024] SUM")
                    .contains("rank 1: allreduce float32[1025] SUM");
        }
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void aRankThatNeverIssuesTheCallIsNamedAtTheTimeout() {
        MpiRun.Job job = job("absent");
        assertThat(job.exitCode()).as(job.output()).isNotZero();
        assertThat(job.textOf(0))
                .as(job.output())
                .containsPattern("FAILED after 3\\.[0-9] s CollectiveTimeoutException")
                .containsPattern(
                        "allreduce #[0-9]+ \\(float32\\[1024\\] SUM\\) timed out after 3 s: rank\\(s\\) \\[1\\] "
                                + "never issued it");
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void withoutTheConsistencyCheckAnAbsentRankEndsTheJobAtTheTimeout() {
        MpiRun.Job job = failsWithin40Seconds("absent", "--no-mpi-consistency-check");
        assertThat(job.output())
                .containsPattern("allreduce #[0-9]+ \\(float32\\[1024\\] SUM\\) did not complete "
                        + "within its timeout \\(3 s\\).*aborting the MPI job");
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void closingAfterATimeoutAbortsTheJobInsteadOfWaitingForThePeer() {
        // Rank 1 sleeps a minute: the abort, not its exit, ends the job.
        MpiRun.Job job = failsWithin40Seconds("abandon");
        assertThat(job.textOf(0)).as(job.output()).contains("CAUGHT ").contains("never issued it");
        // Cohort logs the abort before calling MPI_Abort; Open MPI's own notice may fail to print.
        assertThat(job.output()).containsPattern("aborting the MPI job|MPI_ABORT was invoked on rank 0");
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void aRankStoppedMidRunEndsTheJobAtTheTimeoutNamingTheCall() {
        MpiRun.Job job = failsWithin40Seconds("stop");
        // Stopped inside an allreduce, the watchdog aborts; between two, rank 0 names the absent rank.
        assertThat(job.output() + job.textOf(0))
                .as(job.output())
                .containsPattern(
                        "did not complete within its timeout \\(3 s\\) although every rank issued it.*aborting the MPI job"
                                + "|rank\\(s\\) \\[1\\] never issued it");
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void aKilledRankIsNamedAndTheJobEnds() {
        MpiRun.Job job = job("killed");
        assertThat(job.mpirun().killed()).as("mpirun ended the job itself").isFalse();
        assertThat(job.exitCode()).as(job.output()).isNotZero();
        assertThat(job.output()).containsPattern("process rank 1 with PID [0-9]+ on node \\S+ exited on signal 9");
    }
}
