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
            "Reads records while the job runs, hangs, or after it ended; exit status 1 when DIR holds none."
        })
final class FlightCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Parameters(paramLabel = "DIR", description = "the folder of rank-<r>.flight files")
    Path dir;

    @Option(
            names = "--last",
            paramLabel = "N",
            defaultValue = "8",
            description = "calls shown of each rank (default: ${DEFAULT-VALUE})")
    int last;

    @Override
    public Integer call() throws Exception {
        var out = spec.commandLine().getOut();
        if (!Files.isDirectory(dir)) {
            spec.commandLine()
                    .getErr()
                    .println("cohort flight: " + dir + " is not a folder; name the one " + FlightRecorder.ENV_DIR
                            + " gave the job (cohort run --flight-dir DIR)");
            return 1;
        }
        FlightReport report = FlightReport.of(dir);
        if (report.rings().isEmpty()) {
            spec.commandLine().getErr().println("cohort flight: " + dir + " holds no flight record (rank-<r>.flight)");
            return 1;
        }
        out.println(report.details(Math.max(0, last)));
        out.flush();
        return 0;
    }
}
