package dev.cohort.cli;

import dev.cohort.api.Backends;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.OptionSettings;
import java.util.Map;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;

/**
 * The backend options of a picocli program: the seed's {@code wrap_arg_parser}.
 *
 * <p>A training program calls {@link #add(CommandLine)} once; its command line then takes
 * {@code --distributed-backend NAME} (alias {@code --distr-backend}) and every backend's own
 * options. After parsing, {@link BackendChoice#backend()} is the chosen backend. Options the command
 * line does not give take their settings from the environment and the configuration file ({@link
 * OptionSettings}, {@link OptionDefaults}).
 */
public final class BackendOptions {

    private BackendOptions() {}

    /**
     * Adds {@code --distributed-backend} and every discovered backend's options to {@code cli}.
     * Call before parsing; read the choice after.
     */
    public static BackendChoice add(CommandLine cli) {
        return add(cli, OptionSettings.current());
    }

    /**
     * As {@link #add(CommandLine)}, the options not given on the command line taking {@code
     * settings}' values (the environment's {@code COHORT_<OPTION>}, then the configuration file),
     * the program's own options too, unless it set a default value provider of its own.
     */
    public static BackendChoice add(CommandLine cli, OptionSettings settings) {
        if (cli.getDefaultValueProvider() == null) {
            cli.setDefaultValueProvider(OptionDefaults.of(settings));
            if (cli.getCommandSpec().usageMessage().footer().length == 0) {
                cli.getCommandSpec().usageMessage().footer(OptionDefaults.help());
            }
        }
        Map<String, DistributedBackend> backends = Backends.discover();
        BackendChoice choice = new BackendChoice(backends);
        CommandSpec spec = cli.getCommandSpec();
        spec.addMixin("distributed", CommandSpec.forAnnotatedObject(choice));
        for (DistributedBackend b : backends.values()) {
            Object options = b.commandLineOptions();
            if (options != null) {
                spec.addMixin(
                        "backend-" + b.name(),
                        options instanceof CommandSpec given ? given : CommandSpec.forAnnotatedObject(options));
            }
        }
        return choice;
    }
}
