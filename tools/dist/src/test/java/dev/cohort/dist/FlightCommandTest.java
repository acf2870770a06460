package dev.cohort.dist;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.OpKind;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.runtime.flight.FlightRecorder;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@code cohort flight DIR}: where each rank stands and its last calls, from live rings; a folder without any is an error. */
@Timeout(30)
class FlightCommandTest {

    @TempDir
    Path dir;

    private final Cli cli = new Cli();

    private int flight(String... args) {
        String[] all = new String[args.length + 1];
        all[0] = "flight";
        System.arraycopy(args, 0, all, 1, args.length);
        return cli.run(all);
    }

    @Test
    void readsTheRingsOfARunningJob() {
        FlightRecorder zero = FlightRecorder.inFile(dir.resolve("rank-0.flight"), 0, 2, 32, "tcp");
        FlightRecorder one = FlightRecorder.inFile(dir.resolve("rank-1.flight"), 1, 2, 32, "tcp");
        for (int seq = 0; seq < 5; seq++) {
            Collective call =
                    new Collective(OpKind.ALLREDUCE, seq, DenseBuffer.of(new float[256]), null, ReduceOp.SUM, -1, null);
            zero.settled(zero.issued(call), false);
            if (seq < 4) {
                one.settled(one.issued(call), false);
            }
        }
        zero.issued(new Collective(OpKind.BARRIER, 5, null, null, null, -1, null));

        assertThat(flight("--last", "2", dir.toString())).as(cli.err.toString()).isZero();
        assertThat(cli.out.toString())
                .startsWith("rank 1 completed allreduce #3 (1 KiB float32) and issued nothing since (")
                .contains("; rank 0 waits in barrier #5 for ")
                .contains("rank 0 of 2 (pid " + ProcessHandle.current().pid() + ", 6 calls recorded")
                .contains("  done     allreduce #4 (1 KiB float32), took ")
                .contains("  pending  barrier #5, pending for ")
                .doesNotContain("allreduce #1 ("); // --last 2: neither rank shows it
    }

    /** Without DIR: the rings of the jobs running on this host, in the folders the launcher makes. */
    @Test
    void withoutAFolderItReadsTheJobsRunningHere() throws Exception {
        Path job = Files.createTempDirectory(FlightCommand.LAUNCHER_FOLDERS + "test-");
        try {
            FlightRecorder zero =
                    FlightRecorder.inFile(job.resolve("rank-0.flight"), 0, 1, 32, "tcp"); // this JVM: alive
            zero.issued(new Collective(OpKind.BARRIER, 0, null, null, null, -1, null));
            assertThat(flight()).as(cli.err.toString()).isZero();
            assertThat(cli.out.toString())
                    .contains("the job whose ranks keep their records in " + job + ":")
                    .contains("rank 0 of 1 (pid " + ProcessHandle.current().pid());
        } finally {
            try (var files = Files.list(job)) {
                for (Path f : files.toList()) {
                    Files.delete(f);
                }
            }
            Files.delete(job);
        }
    }

    @Test
    void aFolderWithoutRingsIsAnError() {
        assertThat(flight(dir.toString())).isEqualTo(1);
        assertThat(cli.err.toString()).contains(dir + " holds no flight record (rank-<r>.flight)");
        assertThat(flight(dir.resolve("nowhere").toString())).isEqualTo(1);
        assertThat(cli.err.toString()).contains("nowhere is not a folder");
    }
}
