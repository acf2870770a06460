package dev.cohort.dist;

import dev.cohort.api.Backends;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.OptionSettings;
import dev.cohort.launcher.LauncherMain;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code cohort config}: the settings of {@code cohort run} and the engines besides the command
 * line ({@link OptionSettings}) — {@code init} writes a commented file of every option, {@code show}
 * says which options the environment and the file set, and which file keys name no option.
 */
@Command(
        name = "config",
        description = {
            "Settings of cohort run and of the engines besides the command line: COHORT_<OPTION> in the environment, "
                    + "then option=value in the file " + OptionSettings.ENV_CONFIG + " names (else ./"
                    + OptionSettings.FILE_NAME + ")."
        },
        subcommands = {ConfigCommand.Init.class, ConfigCommand.Show.class})
final class ConfigCommand implements Runnable {

    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    /** The options that can be set, by whose they are: {@code cohort run}'s, then each engine's. */
    static Map<String, List<OptionSpec>> options() {
        Map<String, List<OptionSpec>> all = new LinkedHashMap<>();
        all.put("cohort run", settable(LauncherMain.command().getCommandSpec()));
        for (DistributedBackend b : Backends.discover().values()) {
            Object options = b.commandLineOptions();
            if (options != null) {
                CommandSpec s = options instanceof CommandSpec given ? given : CommandSpec.forAnnotatedObject(options);
                all.put("engine " + b.name(), settable(s));
            }
        }
        return all;
    }

    private static List<OptionSpec> settable(CommandSpec spec) {
        return spec.options().stream()
                .filter(o -> !o.usageHelp() && !o.versionHelp() && !o.hidden())
                .toList();
    }

    private static String bare(OptionSpec o) {
        return o.longestName().replaceFirst("^--?", "");
    }

    @Command(
            name = "init",
            mixinStandardHelpOptions = true,
            description = "Writes FILE (default ./" + OptionSettings.FILE_NAME
                    + "): every option of cohort run and of the engines, commented out, with its meaning and default.")
    static final class Init implements Callable<Integer> {

        @Spec
        CommandSpec spec;

        @Parameters(paramLabel = "FILE", arity = "0..1", description = "where to write (default: ./cohort.properties)")
        Path file = Path.of(OptionSettings.FILE_NAME);

        @Option(names = "--force", description = "replace FILE if it exists")
        boolean force;

        @Override
        public Integer call() throws IOException {
            if (Files.exists(file) && !force) {
                throw new IllegalArgumentException(file + " exists; give --force to replace it");
            }
            StringBuilder s = new StringBuilder();
            s.append("# Cohort's settings: the options of cohort run and of the engines, as option=value.\n")
                    .append("# The command line comes first, then COHORT_<OPTION> in the environment, then this file\n")
                    .append("# (")
                    .append(OptionSettings.ENV_CONFIG)
                    .append(" names it; else ./")
                    .append(OptionSettings.FILE_NAME)
                    .append(" is read), then each option's default.\n")
                    .append("# cohort run hands this file to its workers. Uncomment what you set.\n");
            for (var whose : options().entrySet()) {
                s.append("\n## ").append(whose.getKey()).append('\n');
                for (OptionSpec o : whose.getValue()) {
                    String help = String.join(" ", o.description()).replace("${DEFAULT-VALUE}", value(o));
                    s.append("# ")
                            .append(o.longestName())
                            .append(o.paramLabel().isEmpty() || o.arity().max() == 0 ? "" : " " + o.paramLabel())
                            .append(help.isBlank() ? "" : ": " + help)
                            .append(" (environment: ")
                            .append(OptionSettings.environmentName(o.longestName()))
                            .append(")\n#")
                            .append(bare(o))
                            .append('=')
                            .append(value(o))
                            .append('\n');
                }
            }
            Files.writeString(file, s.toString(), StandardCharsets.UTF_8);
            spec.commandLine().getOut().println("cohort config: wrote " + file.toAbsolutePath());
            return 0;
        }

        /** The option's default as the file would say it; empty where it has none. */
        private static String value(OptionSpec o) {
            if (o.defaultValue() != null) {
                return o.defaultValue();
            }
            Object initial = o.initialValue();
            if (initial == null || initial instanceof java.util.Collection<?>) {
                return "";
            }
            String text = String.valueOf(initial);
            return initial instanceof Double && text.endsWith(".0") ? text.substring(0, text.length() - 2) : text;
        }
    }

    @Command(
            name = "show",
            mixinStandardHelpOptions = true,
            description = "Says which options of cohort run and of the engines the environment "
                    + "and the configuration file set here, and which file keys name no option.")
    static final class Show implements Callable<Integer> {

        @Spec
        CommandSpec spec;

        @Override
        public Integer call() {
            PrintWriter out = spec.commandLine().getOut();
            OptionSettings settings = OptionSettings.current();
            out.println("configuration file: "
                    + settings.file()
                            .map(Path::toString)
                            .orElse("none (" + OptionSettings.ENV_CONFIG + " unset, no ./" + OptionSettings.FILE_NAME
                                    + ")"));
            Set<String> known = new TreeSet<>();
            int set = 0;
            for (var whose : options().entrySet()) {
                for (OptionSpec o : whose.getValue()) {
                    known.add(bare(o));
                    var value = settings.value(o.longestName());
                    if (value.isPresent()) {
                        out.println("  " + o.longestName() + " = " + value.get() + "   ("
                                + settings.source(o.longestName()).orElseThrow() + "; " + whose.getKey() + ")");
                        set++;
                    }
                }
            }
            if (set == 0) {
                out.println("  no option of cohort run or of an engine is set besides the command line");
            }
            List<String> unknown = new ArrayList<>(settings.fileSettings().keySet());
            unknown.removeAll(known);
            if (!unknown.isEmpty()) {
                out.println("not options of cohort run or of an engine (a program's own options are not known here): "
                        + String.join(", ", unknown));
            }
            out.flush();
            return 0;
        }
    }
}
