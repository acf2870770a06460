package dev.cohort.runtime;

import java.util.List;
import java.util.Objects;

/**
 * What an engine needs of the JDK beyond Cohort's Java 17 (given to {@link EngineBackend}'s constructor).
 *
 * @param feature the first JDK feature release the engine runs on
 * @param olderJdksLack what older JDKs lack, for messages ("no foreign-memory API for shared memory")
 * @param jvmOptions the JVM options the engine's workers need on the JDKs it runs on
 */
public record JdkNeed(int feature, String olderJdksLack, List<String> jvmOptions) {

    /**
     * The line a JVM prints among its first on standard error when {@link #jvmOptions} add the Vector
     * API's incubator module: expected, so what starts workers (the launcher, cohort-spark) drops it.
     */
    public static final String INCUBATOR_NOTICE = "WARNING: Using incubator modules: jdk.incubator.vector";

    /** Among how many first lines of a worker's output the JVM's notices stand. */
    public static final int NOTICE_LINES = 4;

    public JdkNeed {
        Objects.requireNonNull(olderJdksLack, "olderJdksLack");
        jvmOptions = List.copyOf(jvmOptions);
    }

    /** Whether this JVM is {@link #feature} or newer. */
    public boolean metHere() {
        return Runtime.version().feature() >= feature;
    }

    /** {@link #jvmOptions} where this JVM meets the need, else none (an older JVM refuses them). */
    public List<String> jvmOptionsHere() {
        return metHere() ? jvmOptions : List.of();
    }
}
