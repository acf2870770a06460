package dev.cohort.bench;

import dev.cohort.cli.Commands;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code ./cohort bench ...}: Cohort's benchmarks. */
@Command(
        name = "cohort bench",
        mixinStandardHelpOptions = true,
        versionProvider = Commands.Version.class,
        resourceBundle = "dev.cohort.bench.Options",
        description = "Benchmarks with JSON output, shaped like the peers' in shared/peers, and charts of them.",
        subcommands = {
            CollectivesBenchmark.class,
            CollectivesBenchmark.Worker.class,
            TrainBenchmark.class,
            TrainBenchmark.Worker.class,
            DataBenchmark.class,
            DataBenchmark.Worker.class,
            BenchChart.class
        })
public final class BenchMain implements Runnable {

    @Override
    public void run() {
        new CommandLine(this).usage(System.out);
    }

    public static void main(String[] args) {
        System.exit(command().execute(args));
    }

    /** This command with Cohort's conventions (see {@link Commands}), to run or to add to another. */
    public static CommandLine command() {
        return Commands.standard(new BenchMain());
    }
}
