package dev.cohort.dist;

import dev.cohort.runtime.flight.FlightRecorder;
import dev.cohort.runtime.flight.FlightReport;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code cohort flight DIR}: where the ranks of a job stand, from their flight records — while
 * the job runs (the records are live), hangs, or after it failed.
 */
@Command(
        name = "flight",
        description = {
            "Where each rank of a job stands, from the flight records its ranks keep in DIR (" + FlightRecorder.ENV_DIR
                    + "): which rank stopped where, then each rank's last calls.",
            "Reads records while the job runs, hangs, or after it ended; without DIR, those of every job cohort run "
                    + "runs on this host. Exit status 1 when there are none."
        })
final class FlightCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Parameters(
            paramLabel = "DIR",
            arity = "0..1",
            description = "the folder of rank-<r>.flight files (default: those of the jobs running on this host)")
    Path dir;

    @Option(
            names = "--last",
            paramLabel = "N",
            defaultValue = "8",
            description = "calls shown of each rank (default: ${DEFAULT-VALUE})")
    int last;

    /** The prefix of the folders the launcher makes for a job's flight records, in the temporary folder. */
    static final String LAUNCHER_FOLDERS = "cohort-flight-";

    @Override
    public Integer call() throws Exception {
        var out = spec.commandLine().getOut();
        var err = spec.commandLine().getErr();
        if (dir == null) {
            return running(out, err);
        }
        if (!Files.isDirectory(dir)) {
            err.println("cohort flight: " + dir + " is not a folder; name the one " + FlightRecorder.ENV_DIR
                    + " gave the job (cohort run --flight-dir DIR)");
            return 1;
        }
        FlightReport report = FlightReport.of(dir);
        if (report.rings().isEmpty()) {
            err.println("cohort flight: " + dir + " holds no flight record (rank-<r>.flight)");
            return 1;
        }
        out.println(report.details(Math.max(0, last)));
        out.flush();
        return 0;
    }

    /** Each job running on this host under {@code cohort run}: the rings in its launcher's folder, while a rank lives. */
    private int running(java.io.PrintWriter out, java.io.PrintWriter err) throws java.io.IOException {
        Path tmp = Path.of(System.getProperty("java.io.tmpdir"));
        int jobs = 0;
        try (var folders = Files.list(tmp)) {
            for (Path folder : folders.filter(
                            f -> f.getFileName().toString().startsWith(LAUNCHER_FOLDERS) && Files.isDirectory(f))
                    .sorted()
                    .toList()) {
                FlightReport report;
                try {
                    report = FlightReport.of(folder);
                } catch (RuntimeException e) {
                    continue; // a folder being removed as its job ends
                }
                if (report.rings().stream()
                        .anyMatch(r -> ProcessHandle.of(r.pid()).isPresent())) {
                    out.println("the job whose ranks keep their records in " + folder + ":");
                    out.println(report.details(Math.max(0, last)));
                    out.println();
                    jobs++;
                }
            }
        }
        out.flush();
        if (jobs == 0) {
            err.println("cohort flight: no job of cohort run is running on this host (no live " + LAUNCHER_FOLDERS
                    + "* folder in " + tmp
                    + "); name the folder of an ended job's records (cohort run --flight-dir DIR)");
            err.flush();
            return 1;
        }
        return 0;
    }
}
