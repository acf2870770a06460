package dev.cohort.dist;

import java.io.PrintWriter;
import java.io.StringWriter;
import picocli.CommandLine;

/** The cohort command run in this JVM, what it writes kept: {@code out} and {@code err}. */
final class Cli {

    final StringWriter out = new StringWriter();
    final StringWriter err = new StringWriter();

    /** Runs {@code cohort args...}; returns its exit status. */
    int run(String... args) {
        CommandLine cli = CohortCommand.command();
        cli.setOut(new PrintWriter(out, true));
        cli.setErr(new PrintWriter(err, true));
        return cli.execute(args);
    }
}
