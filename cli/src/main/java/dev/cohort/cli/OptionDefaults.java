package dev.cohort.cli;

import dev.cohort.api.OptionSettings;
import java.util.Locale;
import picocli.CommandLine;
import picocli.CommandLine.IDefaultValueProvider;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.ParameterException;

/**
 * {@link OptionSettings} for picocli: an option the command line does not give takes its value
 * from the environment ({@code COHORT_<OPTION>}), then the configuration file, then its default.
 */
public final class OptionDefaults {

    private OptionDefaults() {}

    /** The provider of {@code settings}' values, for {@link CommandLine#setDefaultValueProvider}. */
    public static IDefaultValueProvider of(OptionSettings settings) {
        return new Provider(settings);
    }

    private record Provider(OptionSettings settings) implements IDefaultValueProvider {
        @Override
        public String defaultValue(ArgSpec arg) {
            return arg instanceof OptionSpec o && !o.usageHelp() && !o.versionHelp()
                    ? settings.value(o.longestName())
                            .map(v -> isFlag(o) ? flag(v) : v)
                            .orElse(null)
                    : null;
        }
    }

    /**
     * "COHORT_MAX_RESTARTS in the environment: " where {@code e} is about an option that {@code
     * args} do not name and the settings of {@code e}'s command gave; else "".
     */
    public static String settingBehind(ParameterException e, String[] args) {
        if (!(e.getArgSpec() instanceof OptionSpec o)
                || !(e.getCommandLine().getDefaultValueProvider() instanceof Provider p)) {
            return "";
        }
        for (String a : args) {
            for (String name : o.names()) {
                if (a.equals(name) || a.startsWith(name + "=")) {
                    return "";
                }
            }
        }
        return p.settings().source(o.longestName()).map(s -> s + ": ").orElse("");
    }

    /**
     * Sets {@code spec}'s options from {@code settings} alone, as a command line that names none of
     * them would.
     *
     * @throws IllegalArgumentException naming the setting whose value the option does not take
     */
    public static void apply(CommandSpec spec, OptionSettings settings) {
        CommandLine cli = new CommandLine(spec);
        cli.setDefaultValueProvider(of(settings));
        try {
            cli.parseArgs();
        } catch (ParameterException e) {
            String where = e.getArgSpec() instanceof OptionSpec o
                    ? settings.source(o.longestName()).map(s -> s + ": ").orElse("")
                    : "";
            throw new IllegalArgumentException(where + e.getMessage(), e);
        }
    }

    /** One line for a help footer: how the options may be set besides the command line. */
    public static String help() {
        return "Each --option may also be set as COHORT_OPTION in the environment (--gloo-timeout: "
                + "COHORT_GLOO_TIMEOUT) or as option=value in the file " + OptionSettings.ENV_CONFIG + " names, else ./"
                + OptionSettings.FILE_NAME + "; the command line comes first, then the environment, then the file.";
    }

    private static boolean isFlag(OptionSpec o) {
        return o.arity().max() == 0;
    }

    /** "1", "yes", "on" as "true"; "0", "no", "off" as "false"; anything else as given. */
    private static String flag(String value) {
        return switch (value.toLowerCase(Locale.ROOT)) {
            case "1", "yes", "on" -> "true";
            case "0", "no", "off" -> "false";
            default -> value;
        };
    }
}
