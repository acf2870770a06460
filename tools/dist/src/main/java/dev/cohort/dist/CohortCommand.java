package dev.cohort.dist;

import dev.cohort.bench.BenchMain;
import dev.cohort.cli.Commands;
import dev.cohort.launcher.LauncherMain;
import dev.cohort.launcher.LogFormat;
import picocli.AutoComplete;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * {@code cohort}: the command of the distribution ({@code bin/cohort}) and of {@code ./cohort} in
 * the checkout for {@code run}, {@code bench}, {@code data}, {@code doctor}, {@code config}, {@code flight}, {@code trace}, {@code completion} and
 * {@code --version}.
 */
@Command(
        name = "cohort",
        mixinStandardHelpOptions = true,
        versionProvider = Commands.Version.class,
        description = "Distributed data-parallel training for the JVM.",
        commandListHeading = "%nCommands:%n")
public final class CohortCommand implements Runnable {

    private final CommandLine self;

    private CohortCommand() {
        this.self = new CommandLine(this);
    }

    /** The whole command tree, with Cohort's conventions (see {@link Commands}). */
    public static CommandLine command() {
        CommandLine cli = new CohortCommand().self;
        cli.addSubcommand(named("run", LauncherMain.command()));
        cli.addSubcommand(named("bench", BenchMain.command()));
        cli.addSubcommand(DataCommand.command());
        cli.addSubcommand(tool(new DoctorCommand()));
        cli.addSubcommand(tool(new ConfigCommand()));
        cli.addSubcommand(tool(new FlightCommand()));
        cli.addSubcommand(tool(new TraceCommand()));
        CommandLine completion = new CommandLine(new AutoComplete.GenerateCompletion());
        completion
                .getCommandSpec()
                .usageMessage()
                .description("Prints a bash/zsh completion script for cohort: source <(cohort completion)");
        cli.addSubcommand(named("completion", completion));
        return Commands.standard(cli);
    }

    /** One of the distribution's own tools, with {@code --help} and {@code --version} as every command has them. */
    private static CommandLine tool(Object command) {
        CommandLine cli = new CommandLine(command);
        cli.getCommandSpec().mixinStandardHelpOptions(true).versionProvider(new Commands.Version());
        return cli;
    }

    /** {@code sub}, called {@code name} under {@code cohort} (alone it is called {@code cohort name}). */
    private static CommandLine named(String name, CommandLine sub) {
        sub.getCommandSpec().name(name);
        return sub;
    }

    public static void main(String[] args) {
        LogFormat.useHere();
        System.exit(command().execute(args));
    }

    @Override
    public void run() {
        self.usage(self.getOut());
    }
}
