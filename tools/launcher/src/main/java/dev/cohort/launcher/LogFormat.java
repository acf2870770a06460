package dev.cohort.launcher;

import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;

/**
 * How log records look on the console of Cohort's programs and of the Java workers the launcher
 * starts. Cohort's library code logs through {@link System.Logger}, which goes to
 * java.util.logging unless the user routes it elsewhere; java.util.logging's default format takes
 * two lines per record, the first a timestamp, which the launcher's rank prefixes make hard to
 * read. This class sets its {@code SimpleFormatter} to one line instead: the level, the logger's
 * name, the message, then the stack trace when there is one, e.g.
 * {@code WARNING dev.cohort.gloo.GlooProcessGroup: gloo world rank 0 of 2: allreduce #3 ... has waited 30 s; ...}.
 *
 * <p>A user who configures java.util.logging (a format, a configuration file or class) keeps their
 * configuration: it is left alone here and passed on to the workers instead.
 */
public final class LogFormat {

    /** The {@code java.util.logging.SimpleFormatter} format: level, logger, message, throwable. */
    public static final String FORMAT = "%4$s %3$s: %5$s%6$s%n";

    static final String FORMAT_PROPERTY = "java.util.logging.SimpleFormatter.format";
    private static final String PROPERTY_PREFIX = "java.util.logging.";
    private static final List<String> CONFIGURATION =
            List.of(FORMAT_PROPERTY, "java.util.logging.config.file", "java.util.logging.config.class");

    private LogFormat() {}

    /**
     * Gives this JVM's console log records the one-line format, unless its user configured
     * java.util.logging. Call it first thing in {@code main}: the console handler reads the format
     * when it is made, at the first record.
     */
    public static void useHere() {
        if (!userConfigured(System::getProperty)) {
            System.setProperty(FORMAT_PROPERTY, FORMAT);
        }
    }

    /** The JVM options that give a Java worker this JVM's logging: see {@link #workerOptions(List, UnaryOperator)}. */
    static List<String> workerOptions() {
        return workerOptions(
                java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments(), System::getProperty);
    }

    /**
     * The JVM options that give a Java worker the logging of a JVM started with {@code jvmArguments}
     * and with system properties {@code property}: its {@code -Djava.util.logging.*} options, then
     * the one-line format unless the user configured java.util.logging (as {@code ./cohort run}
     * started with {@code -Djava.util.logging.config.file=quiet.properties}, say).
     */
    static List<String> workerOptions(List<String> jvmArguments, UnaryOperator<String> property) {
        List<String> options = new ArrayList<>();
        for (String a : jvmArguments) {
            if (a.startsWith("-D" + PROPERTY_PREFIX)) {
                options.add(a);
            }
        }
        if (!userConfigured(property)) {
            options.add("-D" + FORMAT_PROPERTY + "=" + FORMAT);
        }
        return options;
    }

    /** Whether the user chose how java.util.logging prints: a format other than ours, or a configuration. */
    private static boolean userConfigured(UnaryOperator<String> property) {
        for (String name : CONFIGURATION) {
            String value = property.apply(name);
            if (value != null && !(name.equals(FORMAT_PROPERTY) && value.equals(FORMAT))) {
                return true;
            }
        }
        return false;
    }
}
