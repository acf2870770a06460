package dev.cohort.spark;

import java.io.Serializable;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A Cohort training program to run on a Spark cluster: {@code workers} ranks, each a JVM running
 * {@code mainClass} with {@code args}, started by one task of a barrier stage ({@link CohortOnSpark}).
 *
 * @param workers     ranks, one Spark task each (the cluster must offer that many task slots at once)
 * @param mainClass   the program's main class, on the executors' class path (the application jar)
 * @param args        its arguments, the same for every rank
 * @param jvmOptions  options for each rank's JVM; on JDK 22 or newer the shared-memory engines' flags
 *                    are added unless {@link #withoutDefaultJvmOptions()}
 * @param environment variables added to each rank's environment (e.g. {@code COHORT_BACKEND})
 * @param timeout     how long a rank may run before its task kills it and fails the stage
 * @param defaultJvmOptions whether to add the engines' JVM flags
 */
public record SparkJob(
        int workers,
        String mainClass,
        List<String> args,
        List<String> jvmOptions,
        Map<String, String> environment,
        Duration timeout,
        boolean defaultJvmOptions)
        implements Serializable {

    /** A rank that runs longer than this is killed and fails the stage (change with {@link #withTimeout}). */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofHours(24);

    public SparkJob {
        if (workers < 1) {
            throw new IllegalArgumentException("workers must be >= 1, got " + workers);
        }
        Objects.requireNonNull(mainClass, "mainClass");
        if (mainClass.isBlank()) {
            throw new IllegalArgumentException("mainClass must name the program's main class");
        }
        args = List.copyOf(args);
        jvmOptions = List.copyOf(jvmOptions);
        environment = Map.copyOf(environment);
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("timeout must be positive, got " + timeout);
        }
    }

    /** {@code workers} ranks of {@code mainClass} with {@code args}. */
    public static SparkJob of(int workers, String mainClass, String... args) {
        return new SparkJob(workers, mainClass, List.of(args), List.of(), Map.of(), DEFAULT_TIMEOUT, true);
    }

    public SparkJob withJvmOptions(String... options) {
        List<String> all = new ArrayList<>(jvmOptions);
        all.addAll(List.of(options));
        return new SparkJob(workers, mainClass, args, all, environment, timeout, defaultJvmOptions);
    }

    public SparkJob withEnvironment(String name, String value) {
        Map<String, String> all = new LinkedHashMap<>(environment);
        all.put(name, value);
        return new SparkJob(workers, mainClass, args, jvmOptions, all, timeout, defaultJvmOptions);
    }

    public SparkJob withTimeout(Duration limit) {
        return new SparkJob(workers, mainClass, args, jvmOptions, environment, limit, defaultJvmOptions);
    }

    public SparkJob withoutDefaultJvmOptions() {
        return new SparkJob(workers, mainClass, args, jvmOptions, environment, timeout, false);
    }
}
