package dev.cohort.cli;

import dev.cohort.api.Backends;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.JobEnvironment;
import java.util.Locale;
import java.util.Map;
import picocli.CommandLine.Option;

/**
 * The {@code --distributed-backend} option and the backend it chose; made by
 * {@link BackendOptions#add}. Also answers the seed's {@code using_backend} and
 * {@code is_distributed} questions.
 */
public final class BackendChoice {

    @Option(
            names = {"--distributed-backend", "--distr-backend"},
            paramLabel = "NAME",
            description =
                    "The distributed backend (case-insensitive): ${COMPLETION-CANDIDATES}. "
                            + "auto: the fastest that runs here (shm on one host, hier across hosts, gloo on JDK 17). "
                            + "Default: the COHORT_BACKEND environment variable (./cohort run sets auto), else none (one worker).",
            completionCandidates = Names.class)
    String name;

    private final Map<String, DistributedBackend> backends;
    private DistributedBackend selected;

    BackendChoice(Map<String, DistributedBackend> backends) {
        this.backends = backends;
    }

    /**
     * The chosen backend (the same instance on every call, its options already parsed into it).
     *
     * @throws IllegalArgumentException     for an unknown name, listing the known ones
     * @throws dev.cohort.api.BackendUnavailableException for a known backend that cannot run here
     */
    public synchronized DistributedBackend backend() {
        if (selected == null) {
            selected = Backends.select(name, "--distributed-backend", backends, JobEnvironment.currentVariables());
        }
        return selected;
    }

    /** Whether a distributed backend (anything but {@code none}) was chosen. */
    public boolean isDistributed() {
        return !backend().name().equals(Backends.NONE);
    }

    /** Whether the chosen backend is the one called {@code name} (case-insensitive). */
    public boolean using(String name) {
        return backend().name().equalsIgnoreCase(name);
    }

    /** Whether the chosen backend is an instance of {@code type}. */
    public boolean using(Class<? extends DistributedBackend> type) {
        return type.isInstance(backend());
    }

    /** The backend names, for picocli's completion candidates and help text. */
    static final class Names implements Iterable<String> {
        @Override
        public java.util.Iterator<String> iterator() {
            return Backends.names().iterator();
        }
    }

    @Override
    public String toString() {
        return "--distributed-backend " + (name == null ? "(unset)" : name.toLowerCase(Locale.ROOT));
    }
}
