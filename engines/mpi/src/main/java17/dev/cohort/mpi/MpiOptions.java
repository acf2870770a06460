package dev.cohort.mpi;

import dev.cohort.runtime.EngineOptions;
import java.time.Duration;
import picocli.CommandLine.Option;

/** The mpi backend's command-line options, each next to its default. */
public final class MpiOptions extends EngineOptions<MpiOptions> {

    /** The variable naming the MPI library, as {@code --mpi-library}. */
    public static final String ENV_LIBRARY = "COHORT_MPI_LIBRARY";
    /** Open MPI 4 and 5's library, found on the system's library path. */
    public static final String DEFAULT_LIBRARY = "libmpi.so.40";

    public MpiOptions() {
        super(
                "mpi",
                new Help(
                        "Timeout of each collective (default: 300); past it the job is aborted (MPI cannot "
                                + "cancel a collective).",
                        "Time for all ranks to enter the backend (default: 60).",
                        "A collective waiting longer than this is reported with the ranks it waits for (default: 30)."));
    }

    @Option(
            names = "--mpi-library",
            paramLabel = "PATH",
            description = "Open MPI's C library (default: " + ENV_LIBRARY + ", else " + DEFAULT_LIBRARY
                    + " from the system's library path).")
    String library;

    private final Micros spin = microsOption(
            "spin-us",
            "How long a rank waiting for its peers' signatures polls MPI without yielding the CPU; then it yields "
                    + "between polls, and after 2 ms more sleeps briefly between them (default: 1000 when this host "
                    + "runs no more ranks than it has CPUs, else 0).");

    @Option(
            names = "--mpi-consistency-check",
            negatable = true,
            defaultValue = "true",
            fallbackValue = "true",
            description = "Before each collective the ranks exchange what they call (operation, type, length, reduce "
                    + "op, root, order): ranks that disagree all fail naming each one's call, and a rank that never "
                    + "issues a call is named at its timeout. Off, calls go straight to MPI (about 1 µs less per "
                    + "call), a mismatch is MPI's to catch or not, and a timeout aborts the job without naming the "
                    + "rank (default: on).")
    boolean consistencyCheck = true;

    /** Turns the consistency check off (see --mpi-consistency-check). */
    public MpiOptions consistencyCheck(boolean on) {
        this.consistencyCheck = on;
        return this;
    }

    public boolean consistencyCheck() {
        return consistencyCheck;
    }

    public MpiOptions library(String path) {
        this.library = path;
        return this;
    }

    /** Polls this long before sleeping (see --mpi-spin-us); {@link Duration#ZERO} sleeps at once. */
    public MpiOptions spin(Duration time) {
        spin.assign(time);
        return this;
    }

    /** The library as set, else from {@code environment}, else {@link #DEFAULT_LIBRARY}. */
    public String library(java.util.Map<String, String> environment) {
        if (library != null && !library.isBlank()) {
            return library;
        }
        String fromEnv = environment.get(ENV_LIBRARY);
        return fromEnv != null && !fromEnv.isBlank() ? fromEnv : DEFAULT_LIBRARY;
    }

    /** The polling time of a rank whose host runs {@code ranksOnThisHost} ranks. */
    public Duration spin(int ranksOnThisHost) {
        return spin.orElse(spinWhereCpusAllow(ranksOnThisHost, Duration.ofMillis(1)));
    }
}
