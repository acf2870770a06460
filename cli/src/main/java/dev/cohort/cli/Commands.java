package dev.cohort.cli;

import dev.cohort.api.Backends;
import dev.cohort.api.CohortVersion;
import dev.cohort.api.JobEnvironment;
import dev.cohort.api.OptionSettings;
import java.io.PrintWriter;
import picocli.CommandLine;
import picocli.CommandLine.IVersionProvider;

/**
 * Cohort's command-line conventions for any picocli command: {@code --version} says Cohort's
 * version, the JVM and the engines on the class path; bad input (an unknown option, a bad value,
 * an {@link IllegalArgumentException} from the command) is one line naming what was wrong and a
 * pointer to {@code --help}, with exit code {@value #BAD_INPUT}; never a stack trace. Either way the
 * failure is recorded where the launcher asks ({@link JobEnvironment#recordFailure}).
 */
public final class Commands {

    /** The exit code for bad input: nothing was started. */
    public static final int BAD_INPUT = 2;
    /** The exit code for a failure that is not the input's fault (the message says what). */
    public static final int FAILED = 1;

    private Commands() {}

    /** {@code command} with the conventions above, for {@code execute}. */
    public static CommandLine standard(Object command) {
        CommandLine cli = command instanceof CommandLine given ? given : new CommandLine(command);
        cli.setParameterExceptionHandler((e, args) -> {
            JobEnvironment.recordFailure(e);
            return badInput(e.getCommandLine(), OptionDefaults.settingBehind(e, args) + e.getMessage());
        });
        cli.setExecutionExceptionHandler((e, sub, parsed) -> {
            JobEnvironment.recordFailure(e);
            if (e instanceof IllegalArgumentException) {
                return badInput(sub, e.getMessage());
            }
            PrintWriter err = sub.getErr();
            err.println(sub.getCommandSpec().qualifiedName() + ": " + e);
            err.flush();
            return FAILED;
        });
        return cli;
    }

    private static int badInput(CommandLine cli, String message) {
        PrintWriter err = cli.getErr();
        String name = cli.getCommandSpec().qualifiedName();
        err.println(name + ": " + message);
        err.println("see " + name + " --help");
        err.flush();
        return BAD_INPUT;
    }

    /** For {@code @Command(versionProvider = Commands.Version.class)}. */
    public static final class Version implements IVersionProvider {
        @Override
        public String[] getVersion() {
            return new String[] {
                "cohort " + CohortVersion.get(),
                "JVM: " + Runtime.version() + " (" + System.getProperty("java.vendor") + ", "
                        + System.getProperty("java.home") + ")",
                "engines on the class path: " + String.join(", ", Backends.names()),
                "settings: " + settingsHere(),
            };
        }

        /** Where options not on the command line come from here. */
        private static String settingsHere() {
            try {
                OptionSettings settings = OptionSettings.current();
                long set = System.getenv().keySet().stream()
                        .filter(k -> k.startsWith("COHORT_"))
                        .count();
                return "the command line, then the environment (" + set + " COHORT_* variable(s)), then "
                        + settings.file()
                                .map(f -> f + " (" + settings.fileSettings().size() + " setting(s))")
                                .orElse("no configuration file (" + OptionSettings.ENV_CONFIG + " unset, no ./"
                                        + OptionSettings.FILE_NAME + ")")
                        + ", then each option's default";
            } catch (IllegalArgumentException e) {
                return e.getMessage();
            }
        }
    }
}
