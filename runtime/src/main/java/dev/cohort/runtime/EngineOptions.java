package dev.cohort.runtime;

import dev.cohort.api.Timeouts;
import java.time.Duration;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.IGetter;
import picocli.CommandLine.Model.ISetter;
import picocli.CommandLine.Model.OptionSpec;

/**
 * The options every engine takes, under the engine's prefix: {@code --<engine>-timeout} (each
 * collective), {@code --<engine>-connect-timeout} (all ranks meeting) and
 * {@code --<engine>-stall-seconds} (when a waiting collective is reported). A subclass adds the
 * engine's own options as picocli-annotated fields; {@link #commandSpec()} holds both.
 *
 * @param <O> the subclass, which the fluent setters return
 */
public abstract class EngineOptions<O extends EngineOptions<O>> {

    /** Default timeout of each collective. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofMinutes(5);
    /** Default time allowed for all ranks to meet and connect. */
    public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(60);

    /**
     * {@code spin} where this host has a CPU for each of its {@code ranksOnThisHost} ranks, else
     * none: a rank polling for its peers would take the CPU another rank computes on. CPUs are
     * counted online, not in this process's affinity mask, so a rank pinned to a CPU of its own
     * (mpirun's default) may still poll.
     */
    public static Duration spinWhereCpusAllow(int ranksOnThisHost, Duration spin) {
        return ranksOnThisHost <= hostCpus() ? spin : Duration.ZERO;
    }

    /** CPUs online on this host (/sys/devices/system/cpu/online, e.g. "0-3,8"), at least this JVM's count. */
    public static int hostCpus() {
        int online = 0;
        try {
            for (String range : java.nio.file.Files.readString(java.nio.file.Path.of("/sys/devices/system/cpu/online"))
                    .trim()
                    .split(",")) {
                String[] ends = range.split("-");
                online += ends.length == 1 ? 1 : Integer.parseInt(ends[1]) - Integer.parseInt(ends[0]) + 1;
            }
        } catch (java.io.IOException | RuntimeException e) {
            online = 0; // not Linux, or unreadable: the JVM's count below
        }
        return Math.max(online, Runtime.getRuntime().availableProcessors());
    }
    /** Default time after which a waiting collective is reported as stalled. */
    public static final Duration DEFAULT_STALL_TIME = Duration.ofSeconds(30);

    /** The help texts of the three options: what each means for this engine, with its default. */
    public record Help(String timeout, String connectTimeout, String stall) {

        /** The help of an engine whose ranks meet and connect over the network (tcp, gloo). */
        public static Help ofNetworkEngine(String engine) {
            return new Help(
                    "Timeout of each collective (default: 300).",
                    "Time for all ranks to meet and connect (default: 60).",
                    "A collective waiting longer than this is reported with the ranks it waits for "
                            + "(default: 30; it still fails only at --" + engine + "-timeout).");
        }
    }

    private final String engine;
    private final String prefix;
    /** A setting of the environment or the configuration file these options could not take; null: none. */
    private IllegalArgumentException settingsProblem;

    private final Help help;
    private String joinsAs;
    private boolean awaitedAtOnce;
    private RankNames rankNames = RankNames.PLAIN;
    private final Setting timeout;
    private final Setting connectTimeout;
    private final Setting stall;
    private final java.util.List<Micros> microsOptions = new java.util.ArrayList<>();
    private final java.util.List<Text> textOptions = new java.util.ArrayList<>();

    /** @param engine the engine's name, the options' prefix ({@code gloo} for {@code --gloo-timeout}) */
    protected EngineOptions(String engine, Help help) {
        this.engine = engine;
        this.prefix = "--" + engine + "-";
        this.help = help;
        this.timeout = new Setting(prefix + "timeout", DEFAULT_TIMEOUT);
        this.connectTimeout = new Setting(prefix + "connect-timeout", DEFAULT_CONNECT_TIMEOUT);
        this.stall = new Setting(prefix + "stall-seconds", DEFAULT_STALL_TIME);
    }

    /** This object, as its own type. */
    @SuppressWarnings("unchecked")
    protected final O self() {
        return (O) this;
    }

    /** Timeout of each collective. */
    public final O timeout(Duration value) {
        timeout.assign(value);
        return self();
    }

    /** Time for all ranks to meet and connect. */
    public final O connectTimeout(Duration value) {
        connectTimeout.assign(value);
        return self();
    }

    /** A collective waiting longer than this is reported with the ranks it waits for. */
    public final O stallTime(Duration value) {
        stall.assign(value);
        return self();
    }

    /**
     * Names what this process runs when the ranks join, for a group that is part of another
     * backend (hier's group of host leaders): ranks that run something else are told so at once.
     */
    public final O joinsAs(String description) {
        if (description.contains("|")) {
            throw new IllegalArgumentException("joinsAs must not contain '|', got '" + description + "'");
        }
        this.joinsAs = description;
        return self();
    }

    /** What this process runs, as its join announces it: "the ENGINE backend" unless {@link #joinsAs(String)} said. */
    public final String joinsAs() {
        return joinsAs != null ? joinsAs : "the " + engine + " backend";
    }

    /**
     * For a group inside another backend that awaits each of its calls as soon as it makes it (hier's
     * groups within and between hosts): the group runs no engine thread of its own
     * ({@link CallQueue.Options#callersOnly()}); a call nobody awaits would not start.
     */
    public final O awaitedAtOnce(boolean value) {
        this.awaitedAtOnce = value;
        return self();
    }

    /** The options of the group's call queue: callers only when {@link #awaitedAtOnce(boolean)} said so. */
    public final CallQueue.Options queueOptions() {
        CallQueue.Options o = new CallQueue.Options();
        return awaitedAtOnce ? o.callersOnly() : o;
    }

    /**
     * How the group's messages name its ranks, for a group that is part of another backend's (hier
     * names its leaders by their global ranks); plain numbers by default.
     */
    public final O rankNames(RankNames names) {
        this.rankNames = java.util.Objects.requireNonNull(names, "names");
        return self();
    }

    public final RankNames rankNames() {
        return rankNames;
    }

    public final Duration timeout() {
        return timeout.duration();
    }

    public final Duration connectTimeout() {
        return connectTimeout.duration();
    }

    public final Duration stallTime() {
        return stall.duration();
    }

    /** The option name {@code --<engine>-<suffix>}, for the subclass's error messages. */
    protected final String option(String suffix) {
        return prefix + suffix;
    }

    /** {@code value} of the option {@code --<engine>-<suffix>}, which must not be negative. */
    protected final int nonNegative(String suffix, int value) {
        if (value < 0) {
            throw new IllegalArgumentException(option(suffix) + " must be >= 0, got " + value);
        }
        return value;
    }

    /** {@code time} in whole microseconds, for an option that counts them; never negative. */
    protected final int micros(String suffix, Duration time) {
        if (time.isNegative()) {
            throw new IllegalArgumentException(option(suffix) + " must be >= 0, got " + time);
        }
        return Math.toIntExact(time.toNanos() / 1000);
    }

    /** The time a microseconds option says, or {@code null} where it is not set. */
    protected final Duration ofMicros(String suffix, Integer micros) {
        return micros == null ? null : Duration.ofNanos(nonNegative(suffix, micros) * 1000L);
    }

    /**
     * These options with the settings of this process's environment and configuration file ({@link
     * dev.cohort.api.OptionSettings}): what an engine made without options of the caller's starts
     * from; code and the command line may change them afterwards. A setting they cannot take is
     * told by {@link #checkSettings()} (as the engine initializes), not here: discovering the
     * engines never fails for it.
     */
    public final O fromSettings() {
        try {
            return fromSettings(dev.cohort.api.OptionSettings.current());
        } catch (IllegalArgumentException e) {
            settingsProblem = e; // the configuration file cannot be read
            return self();
        }
    }

    /** As {@link #fromSettings()}, with {@code settings} (a program's own environment and file). */
    public final O fromSettings(dev.cohort.api.OptionSettings settings) {
        try {
            dev.cohort.cli.OptionDefaults.apply(commandSpec(), settings);
        } catch (IllegalArgumentException e) {
            settingsProblem = e;
        }
        return self();
    }

    /** Throws what {@link #fromSettings()} could not take, naming the setting; nothing otherwise. */
    public final void checkSettings() {
        if (settingsProblem != null) {
            throw new IllegalArgumentException(
                    "the " + engine + " engine's settings: " + settingsProblem.getMessage(), settingsProblem);
        }
    }

    /**
     * Sets these options from command-line words, e.g. {@code parse("--gloo-timeout=60")}; the
     * options not given take the environment's and the configuration file's settings ({@link
     * dev.cohort.api.OptionSettings}), else their defaults.
     *
     * @throws picocli.CommandLine.ParameterException naming the word it could not take
     */
    public final O parse(String... args) {
        new CommandLine(commandSpec())
                .setDefaultValueProvider(dev.cohort.cli.OptionDefaults.of(dev.cohort.api.OptionSettings.current()))
                .parseArgs(args);
        return self();
    }

    /**
     * The command-line options: the subclass's annotated fields, the three above, and those it added
     * through {@link #microsOption} and {@link #textOption}.
     */
    public final CommandSpec commandSpec() {
        // Lenient: an engine may declare all its options through this class (no annotated field).
        CommandSpec spec = CommandSpec.forAnnotatedObjectLenient(this);
        spec.addOption(timeout.spec(help.timeout()));
        spec.addOption(connectTimeout.spec(help.connectTimeout()));
        spec.addOption(stall.spec(help.stall()));
        for (Micros m : microsOptions) {
            spec.addOption(m.spec());
        }
        for (Text t : textOptions) {
            spec.addOption(t.spec());
        }
        return spec;
    }

    /**
     * Adds the option {@code --<engine>-<suffix> MICROSECONDS}, unset by default, to this engine's
     * command line ({@link #commandSpec()}); the subclass keeps what this returns to read it.
     */
    protected final Micros microsOption(String suffix, String description) {
        Micros m = new Micros(suffix, description);
        microsOptions.add(m);
        return m;
    }

    /**
     * Adds the option {@code --<engine>-<suffix> LABEL}, a word unset by default, to this engine's
     * command line ({@link #commandSpec()}); the subclass keeps what this returns to read it.
     */
    protected final Text textOption(String suffix, String label, String description) {
        Text t = new Text(option(suffix), label, description);
        textOptions.add(t);
        return t;
    }

    /** An option's value, which picocli reads and writes through this object. */
    private abstract static class Held<V> implements IGetter, ISetter {
        V value;

        Held(V initial) {
            this.value = initial;
        }

        /** The option's spec: {@code builder}'s, read and written here. */
        final OptionSpec spec(OptionSpec.Builder builder) {
            return builder.getter(this).setter(this).build();
        }

        @Override
        @SuppressWarnings("unchecked")
        public final <T> T get() {
            return (T) value;
        }

        @Override
        @SuppressWarnings("unchecked")
        public final <T> T set(T v) {
            V old = value;
            value = (V) v;
            return (T) old;
        }
    }

    /** An option that counts microseconds (see {@link #microsOption}); checked when set and when read. */
    protected final class Micros extends Held<Integer> {
        private final String suffix;
        private final String description;

        private Micros(String suffix, String description) {
            super(null);
            this.suffix = suffix;
            this.description = description;
        }

        /** Sets it to {@code time}, in whole microseconds; never negative. */
        public void assign(Duration time) {
            value = micros(suffix, time);
        }

        /** The time set, else {@code byDefault}. */
        public Duration orElse(Duration byDefault) {
            Duration set = ofMicros(suffix, value);
            return set != null ? set : byDefault;
        }

        OptionSpec spec() {
            return spec(OptionSpec.builder(option(suffix))
                    .paramLabel("MICROSECONDS")
                    .type(Integer.class)
                    .description(description));
        }
    }

    /** An option that holds a word (see {@link #textOption}); {@code null} while unset. */
    protected static final class Text extends Held<String> {
        private final String name;
        private final String label;
        private final String description;

        private Text(String name, String label, String description) {
            super(null);
            this.name = name;
            this.label = label;
            this.description = description;
        }

        public void assign(String word) {
            value = word;
        }

        /** The word set, or {@code null}. */
        public String value() {
            return value;
        }

        /** The option's name, {@code --<engine>-<suffix>}, for messages. */
        public String name() {
            return name;
        }

        OptionSpec spec() {
            return spec(OptionSpec.builder(name)
                    .paramLabel(label)
                    .type(String.class)
                    .description(description));
        }
    }

    /**
     * One seconds option: kept as the number given, checked when read, so that a bad value on the
     * command line fails naming the option when the engine starts, as a bad value set here does at once.
     */
    private static final class Setting extends Held<Double> {
        private final String name;
        private final double initial;

        Setting(String name, Duration byDefault) {
            super(byDefault.toNanos() / 1e9);
            this.name = name;
            this.initial = value;
        }

        void assign(Duration time) {
            value = Timeouts.toSeconds(name, time);
        }

        Duration duration() {
            return Timeouts.ofSeconds(name, value);
        }

        OptionSpec spec(String description) {
            return spec(OptionSpec.builder(name)
                    .paramLabel("SECONDS")
                    .type(double.class)
                    .description(description)
                    .initialValue(initial)
                    .hasInitialValue(true));
        }
    }
}
