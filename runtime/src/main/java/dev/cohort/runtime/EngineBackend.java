package dev.cohort.runtime;

import dev.cohort.api.Connection;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.JobEnvironment;
import dev.cohort.runtime.auth.JobSecret;
import dev.cohort.runtime.flight.FlightRecorder;
import java.lang.reflect.InvocationTargetException;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A backend configured by an options object (its command-line options) and a launch environment
 * (the process's, or one given by a program that starts ranks itself). Subclasses say what this
 * JVM lacks for the engine ({@link #missing()}) and how to connect.
 *
 * <p>Engines that need a newer JDK than Cohort's Java 17 keep a subclass compiled for Java 17, so
 * that {@link java.util.ServiceLoader} loads it on every JDK and it can say what is missing, and
 * reach the engine itself through {@link #connectLoaded}.
 *
 * @param <O> the options type
 */
public abstract class EngineBackend<O extends EngineOptions<O>> extends DistributedBackend {

    private final String name;
    protected final O options;
    /** The launch environment given, or null: this process's job, read when first needed. */
    private final Map<String, String> given;
    /** What the engine needs of the JDK beyond Java 17, or null: nothing. */
    private final JdkNeed jdk;

    /** An engine of this process's job ({@link JobEnvironment#current()}, read when it connects). */
    protected EngineBackend(String name, O options) {
        this(name, null, options, null);
    }

    /** An engine of the launch environment {@code environment} (a program that starts ranks itself). */
    protected EngineBackend(String name, O options, Map<String, String> environment) {
        this(name, null, options, Map.copyOf(environment));
    }

    /**
     * An engine that needs {@code jdk} of the JDK, of the launch environment {@code environment},
     * or of this process's job where it is null.
     */
    protected EngineBackend(String name, JdkNeed jdk, O options, Map<String, String> environment) {
        this.name = name;
        this.jdk = jdk;
        this.options = options;
        this.given = environment == null ? null : Map.copyOf(environment);
    }

    /** Throws what the options could not take of the settings they were made from ({@link EngineOptions#fromSettings}). */
    @Override
    protected final void checkSettings() {
        options.checkSettings();
    }

    @Override
    public final int minimumJdk() {
        return jdk == null ? super.minimumJdk() : jdk.feature();
    }

    @Override
    public final String olderJdksLack() {
        return jdk == null ? super.olderJdksLack() : jdk.olderJdksLack();
    }

    @Override
    public final List<String> jvmOptions() {
        return jdk == null ? super.jvmOptions() : jdk.jvmOptionsHere();
    }

    /**
     * The launch environment: the one given, else this process's job. Read late, so that
     * discovering the engines reads nothing, and the job's host layout, where it must be learned
     * ({@link JobEnvironment#current()}), is learned once and only by the engine that runs.
     */
    protected final Map<String, String> env() {
        return given != null ? given : JobEnvironment.currentVariables();
    }

    /**
     * The variables a launcher set, as given or as this process's environment, without deriving
     * anything: what an engine may read before it connects (e.g. whether mpirun started the job).
     */
    protected final Map<String, String> launchVariables() {
        return given != null ? given : System.getenv();
    }

    /**
     * A new instance of this engine's class made by its public {@code (options, environment)}
     * constructor, with these options.
     */
    @Override
    public DistributedBackend forEnvironment(Map<String, String> environment) {
        try {
            return getClass()
                    .getConstructor(options.getClass(), Map.class)
                    .newInstance(options, Map.copyOf(environment));
        } catch (InvocationTargetException e) {
            throw e.getCause() instanceof RuntimeException r ? r : new IllegalStateException(e.getCause());
        } catch (ReflectiveOperationException e) {
            return super.forEnvironment(environment);
        }
    }

    /**
     * The job's secret ({@link JobSecret#ENV}, {@link JobSecret#FILE_ENV}) from the launch
     * environment, if it has one: every connection the engine opens or accepts proves it.
     */
    protected final Optional<JobSecret> secret() {
        return given != null ? JobSecret.from(given) : JobSecret.ofProcess();
    }

    @Override
    public final String name() {
        return name;
    }

    @Override
    public final boolean isAvailable() {
        return missing() == null;
    }

    @Override
    public final String unavailableReason() {
        String m = missing();
        return m == null ? "" : m;
    }

    /** The command-line options of {@link #options()}: the engine's own and those of every engine. */
    @Override
    public final Object commandLineOptions() {
        return options.commandSpec();
    }

    /** The options this backend connects with; change them before {@code initialize}. */
    public final O options() {
        return options;
    }

    /**
     * What this JVM lacks for the engine and what to do about it, or {@code null} (the default: an
     * engine that needs nothing beyond the JDK). Never throws.
     */
    protected String missing() {
        return null;
    }

    /**
     * Puts the world group's calls on record ({@link FlightRecorder#forJob}: in memory, or in
     * {@value FlightRecorder#ENV_DIR} where the launcher or the user set it), then tells the
     * {@link JobObserver}s on the class path; they stop as the connection closes.
     */
    @Override
    protected final Connection joined(Connection connection) {
        if (!(connection.world() instanceof AbstractProcessGroup world)) {
            return connection;
        }
        if (world.flightRecorder().isEmpty()) {
            FlightRecorder.forJob(
                            env(),
                            connection.topology().rank(),
                            connection.topology().worldSize(),
                            name())
                    .ifPresent(world::recordsFlight);
        }
        List<AutoCloseable> observing = new java.util.ArrayList<>();
        try {
            for (JobObserver observer : java.util.ServiceLoader.load(JobObserver.class)) {
                observing.add(observer.joined(world, connection.topology(), env()));
            }
        } catch (RuntimeException | Error e) {
            closeAll(observing);
            throw e;
        }
        if (observing.isEmpty()) {
            return connection;
        }
        AutoCloseable engine = connection.resources();
        return new Connection(connection.topology(), connection.world(), connection.node(), () -> {
            try {
                closeAll(observing);
            } finally {
                engine.close();
            }
        });
    }

    private static void closeAll(List<AutoCloseable> all) {
        for (AutoCloseable c : all) {
            try {
                c.close();
            } catch (Exception e) {
                System.getLogger(EngineBackend.class.getName())
                        .log(System.Logger.Level.WARNING, "closing " + c + " failed: " + e, e);
            }
        }
    }

    /**
     * Connects through {@code engineClass}'s static {@code connect(O options, Map env)}, loaded
     * only now: the class may need a newer JDK than this one's caller was compiled for. The
     * engine's own exceptions pass through unwrapped.
     */
    protected final Connection connectLoaded(String engineClass, Class<O> optionsType) {
        try {
            return (Connection) Class.forName(engineClass)
                    .getMethod("connect", optionsType, Map.class)
                    .invoke(null, options, env());
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException r) {
                throw r;
            }
            if (cause instanceof Error err) {
                throw err;
            }
            throw new IllegalStateException(cause);
        } catch (ReflectiveOperationException | LinkageError e) {
            throw new IllegalStateException("cannot load the " + name + " engine (" + engineClass + "): " + e, e);
        }
    }
}
