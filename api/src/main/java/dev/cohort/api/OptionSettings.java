package dev.cohort.api;

import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeMap;

/**
 * Where an option's value comes from when the command line does not give it: the environment
 * ({@code COHORT_<OPTION>}: {@code --gloo-timeout} is {@code COHORT_GLOO_TIMEOUT}), then a
 * configuration file ({@code gloo-timeout=60}), then the option's own default. The file is the one
 * {@value #ENV_CONFIG} names, else {@value #FILE_NAME} in the working directory if there is one;
 * Java properties, so that it needs no library and takes {@code #} comments ({@code cohort config
 * init} writes one with every option). {@code cohort run}, every engine's options and the options
 * of a program that takes {@code BackendOptions} read their values here; {@code cohort run} hands
 * its file to the workers.
 */
public final class OptionSettings {

    /** The variable naming the configuration file. */
    public static final String ENV_CONFIG = "COHORT_CONFIG";
    /** The file read from the working directory when {@value #ENV_CONFIG} is not set. */
    public static final String FILE_NAME = "cohort.properties";

    private final Map<String, String> env;
    private final Path file;
    private final Map<String, String> fromFile;

    private OptionSettings(Map<String, String> env, Path file, Map<String, String> fromFile) {
        this.env = Map.copyOf(env);
        this.file = file;
        this.fromFile = fromFile;
    }

    /** The settings of this process: its environment and its file. */
    public static OptionSettings current() {
        return of(System.getenv());
    }

    /**
     * The settings of {@code env} and of the file it names ({@value #ENV_CONFIG}), or of {@value
     * #FILE_NAME} in the working directory where it names none.
     *
     * @throws IllegalArgumentException when {@value #ENV_CONFIG} names a file that cannot be read
     *     as properties
     */
    public static OptionSettings of(Map<String, String> env) {
        String named = env.get(ENV_CONFIG);
        Path file = named != null && !named.isBlank() ? Path.of(named.trim()) : Path.of(FILE_NAME);
        if (named != null && !named.isBlank() && !Files.isRegularFile(file)) {
            throw new IllegalArgumentException(ENV_CONFIG + " names " + file.toAbsolutePath()
                    + ", which is not a file; make it with cohort config" + " init, or unset " + ENV_CONFIG);
        }
        if (!Files.isRegularFile(file)) {
            return new OptionSettings(env, null, Map.of());
        }
        return new OptionSettings(env, file.toAbsolutePath(), read(file));
    }

    private static Map<String, String> read(Path file) {
        Properties p = new Properties();
        try (Reader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            p.load(in);
        } catch (IOException | IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    "cannot read the configuration " + file.toAbsolutePath() + ": " + e.getMessage(), e);
        }
        Map<String, String> values = new TreeMap<>();
        for (String key : p.stringPropertyNames()) {
            values.put(
                    key.startsWith("--") ? key.substring(2) : key,
                    p.getProperty(key).trim());
        }
        return values;
    }

    /** {@code COHORT_GLOO_TIMEOUT} for {@code --gloo-timeout} (or {@code gloo-timeout}). */
    public static String environmentName(String option) {
        return "COHORT_" + bare(option).toUpperCase(Locale.ROOT).replace('-', '_');
    }

    /** The value {@code option} takes when the command line does not give it, if the environment or the file sets it. */
    public Optional<String> value(String option) {
        String set = env.get(environmentName(option));
        if (set != null && !set.isBlank()) {
            return Optional.of(set.trim());
        }
        return Optional.ofNullable(fromFile.get(bare(option)));
    }

    /** Where {@link #value} found it: "COHORT_GLOO_TIMEOUT in the environment", "gloo-timeout in /job/cohort.properties". */
    public Optional<String> source(String option) {
        String set = env.get(environmentName(option));
        if (set != null && !set.isBlank()) {
            return Optional.of(environmentName(option) + " in the environment");
        }
        return fromFile.containsKey(bare(option)) ? Optional.of(bare(option) + " in " + file) : Optional.empty();
    }

    /** The file read, if any. */
    public Optional<Path> file() {
        return Optional.ofNullable(file);
    }

    /** The file's settings, by option name without dashes. */
    public Map<String, String> fileSettings() {
        return fromFile;
    }

    /** "--gloo-timeout" and "gloo-timeout" alike: "gloo-timeout". */
    private static String bare(String option) {
        Objects.requireNonNull(option, "option");
        return option.startsWith("--") ? option.substring(2) : option;
    }
}
