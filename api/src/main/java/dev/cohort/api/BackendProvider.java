package dev.cohort.api;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * What {@code auto} asks of each engine on the class path: its name, the JDK it needs, whether it
 * runs in this JVM, and how well it suits a job. {@link DistributedBackend} implements it, so an
 * engine declares its own place in {@link Backends#auto} and {@code auto} names no engine.
 */
public interface BackendProvider {

    /** The engine's name, as chosen with {@code --distributed-backend} (lower case). */
    String name();

    /** The oldest JDK (feature version) the engine runs on. */
    default int minimumJdk() {
        return 17;
    }

    /** What JDKs older than {@link #minimumJdk()} lack, for messages ("no foreign-memory API for shared memory"). */
    default String olderJdksLack() {
        return "not what the " + name() + " engine needs";
    }

    /**
     * JVM options a process that runs the engine needs (an incubator module, say): launchers add
     * them to the Java workers they start. Empty by default.
     */
    default List<String> jvmOptions() {
        return List.of();
    }

    /** Whether the engine's classes and native libraries load here. Never throws. */
    boolean isAvailable();

    /** When {@link #isAvailable()} is false: what is missing and how to get it. */
    String unavailableReason();

    /**
     * How well the engine suits a job of several workers laid out as {@code layout}, and why: the
     * highest preference wins {@code auto}; empty (the default) when {@code auto} should never
     * pick it for such a job.
     */
    default Optional<AutoFit> autoFit(JobLayout layout) {
        return Optional.empty();
    }

    /**
     * Whether the engine's ranks meet at {@code MASTER_ADDR:MASTER_PORT}. {@code auto} passes over
     * such engines when the launch environment gives no address (as {@code mpirun} without
     * {@code -x MASTER_ADDR}): then engines that need none run (shm on one host, mpi).
     */
    default boolean needsRendezvousAddress() {
        return false;
    }

    /**
     * How well an engine suits a job, for {@code auto}.
     *
     * @param preference the higher, the more {@code auto} prefers the engine
     * @param reason why it suits the job, for {@code auto}'s message ("all 4 workers on one host:
     *     shared memory")
     */
    record AutoFit(int preference, String reason) {

        public AutoFit {
            Objects.requireNonNull(reason, "reason");
        }
    }
}
