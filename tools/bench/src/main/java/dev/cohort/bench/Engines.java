package dev.cohort.bench;

import dev.cohort.api.DistributedBackend;
import dev.cohort.cli.BackendChoice;
import dev.cohort.cli.BackendOptions;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** A worker's backend: chosen by name and configured with the engine options its benchmark was given. */
final class Engines {

    private Engines() {}

    /** The command line the engine options are parsed on (the backends add theirs). */
    @Command(name = "engine-options")
    static final class EngineOptions {}

    /**
     * The backend {@code name} with {@code engineOptions} (e.g. {@code --gloo-spin-us=0}), not yet
     * initialized.
     *
     * @throws CommandLine.ParameterException naming an option no backend knows
     */
    static DistributedBackend open(String name, List<String> engineOptions) {
        CommandLine engineCli = new CommandLine(new EngineOptions());
        BackendChoice choice = BackendOptions.add(engineCli);
        List<String> args = new ArrayList<>(List.of("--distributed-backend", name));
        args.addAll(engineOptions);
        engineCli.parseArgs(args.toArray(String[]::new));
        return choice.backend();
    }
}
