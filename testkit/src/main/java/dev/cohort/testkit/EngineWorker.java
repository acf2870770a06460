package dev.cohort.testkit;

import dev.cohort.api.DistributedBackend;
import dev.cohort.cli.BackendChoice;
import dev.cohort.cli.BackendOptions;
import java.util.Arrays;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The worker process every engine's conformance tests start: {@code EngineWorker MODE
 * --distributed-backend NAME [engine options...]}, the backend found and configured from the
 * command line as a training program's would be ({@link BackendOptions#add}). Modes:
 * {@code conformance} (the whole suite) and {@code conformance-small} (without the 4 Mi cases);
 * then the checks of {@link WorkerProcess#finish}. Prints {@code BACKEND}, {@code TOPOLOGY},
 * {@code NODE} and {@code OK} lines.
 */
public final class EngineWorker {

    @Command(name = "engine-worker")
    static final class Cli {}

    private EngineWorker() {}

    /** Modes of an engine's own worker, tried before the conformance modes. */
    @FunctionalInterface
    public interface Modes {
        /** Runs {@code mode} and returns true, or returns false when it is not one of these. */
        boolean run(String mode, DistributedBackend backend) throws Exception;
    }

    public static void main(String[] args) {
        run(args, (mode, backend) -> false);
    }

    /** As {@link #main}, with an engine's own {@code modes} too. */
    public static void run(String[] args, Modes modes) {
        String mode = args[0];
        CommandLine cli = new CommandLine(new Cli());
        BackendChoice choice = BackendOptions.add(cli);
        cli.parseArgs(Arrays.copyOfRange(args, 1, args.length));
        WorkerProcess.main(() -> {
            try (DistributedBackend backend = choice.backend()) {
                backend.initialize();
                System.out.println("BACKEND " + backend.name());
                System.out.println("TOPOLOGY " + backend.topology());
                if (modes.run(mode, backend)) {
                    return;
                }
                int checks = WorkerProcess.conformance(mode, backend)
                        .orElseThrow(() -> new IllegalArgumentException("unknown mode " + mode));
                WorkerProcess.finish(backend, checks);
            }
        });
    }
}
