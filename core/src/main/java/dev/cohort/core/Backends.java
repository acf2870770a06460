package dev.cohort.core;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.TreeMap;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;

/**
 * Finds the backends on the class path ({@link ServiceLoader} of {@link DistributedBackend}) and
 * picks one by name: the seed's {@code distributed_utils}.
 *
 * <p>A training program calls {@link #addOptions(CommandLine)} once; its command line then takes
 * {@code --distributed-backend NAME} (alias {@code --distr-backend}) and every backend's own
 * options. After parsing, {@link BackendChoice#backend()} is the chosen backend.
 */
public final class Backends {

    /** The environment variable naming the backend when no command-line option does. */
    public static final String ENV_BACKEND = "COHORT_BACKEND";

    private Backends() {
    }

    /** A fresh instance of every backend on the class path, plus {@code none}, by lower-case name. */
    public static Map<String, DistributedBackend> discover() {
        Map<String, DistributedBackend> byName = new TreeMap<>();
        NonDistributedBackend none = new NonDistributedBackend();
        byName.put(none.name(), none);
        for (DistributedBackend b : ServiceLoader.load(DistributedBackend.class)) {
            byName.putIfAbsent(b.name().toLowerCase(Locale.ROOT), b);
        }
        return byName;
    }

    /** The names of the backends on the class path. */
    public static List<String> names() {
        return new ArrayList<>(discover().keySet());
    }

    /**
     * The backend called {@code name} (case-insensitive); {@code null} or blank means the
     * {@value #ENV_BACKEND} environment variable, and when that is unset too, {@code none}.
     *
     * @throws IllegalArgumentException     for an unknown name, listing the known ones
     * @throws BackendUnavailableException for a known backend that cannot run here
     */
    public static DistributedBackend select(String name) {
        return select(name, discover(), System.getenv());
    }

    static DistributedBackend select(String name, Map<String, DistributedBackend> backends, Map<String, String> env) {
        String chosen = name;
        String source = "--distributed-backend";
        if (chosen == null || chosen.isBlank()) {
            chosen = env.get(ENV_BACKEND);
            source = ENV_BACKEND;
        }
        if (chosen == null || chosen.isBlank()) {
            return backends.get(NonDistributedBackend.NAME);
        }
        DistributedBackend backend = backends.get(chosen.trim().toLowerCase(Locale.ROOT));
        if (backend == null) {
            throw new IllegalArgumentException("unknown backend '" + chosen + "' (from " + source
                    + "); available: " + String.join(", ", backends.keySet()));
        }
        if (!backend.isAvailable()) {
            throw new BackendUnavailableException("the " + backend.name() + " backend (from " + source
                    + ") cannot run here: " + backend.unavailableReason());
        }
        return backend;
    }

    /**
     * Adds {@code --distributed-backend} and every discovered backend's options to {@code cli}:
     * the seed's {@code wrap_arg_parser}. Call before parsing; read the choice after.
     */
    public static BackendChoice addOptions(CommandLine cli) {
        Map<String, DistributedBackend> backends = discover();
        BackendChoice choice = new BackendChoice(backends);
        CommandSpec spec = cli.getCommandSpec();
        spec.addMixin("distributed", CommandSpec.forAnnotatedObject(choice));
        for (DistributedBackend b : backends.values()) {
            Object options = b.commandLineOptions();
            if (options != null) {
                spec.addMixin("backend-" + b.name(), CommandSpec.forAnnotatedObject(options));
            }
        }
        return choice;
    }
}
