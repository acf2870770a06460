package dev.cohort.runtime.threads;

import dev.cohort.api.Connection;
import dev.cohort.api.DistributedBackend;
import picocli.CommandLine.Option;

/**
 * The {@code threads} backend: ranks are threads of one JVM. Inside a thread started by
 * {@link ThreadsWorld#run}, {@link #initialize()} joins that world as that thread's rank; called
 * from any other thread it makes a world of one.
 */
public final class ThreadsBackend extends DistributedBackend {

    public static final String NAME = "threads";

    /** Command-line options of the threads backend. */
    public static final class Options {
        @Option(
                names = "--threads-world-size",
                paramLabel = "N",
                description = "Ranks of a threads world started outside ThreadsWorld.run; only 1 can "
                        + "run on the calling thread (default: ${DEFAULT-VALUE}).")
        int worldSize = 1;
    }

    private final Options options = new Options();

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Object commandLineOptions() {
        return options;
    }

    @Override
    protected Connection connect() {
        ThreadsWorld.Membership m = ThreadsWorld.current();
        if (m != null) {
            return m.world().connect(m.rank());
        }
        if (options.worldSize != 1) {
            throw new IllegalStateException("--threads-world-size " + options.worldSize
                    + " needs one thread per rank: start the ranks with ThreadsWorld.run(" + options.worldSize
                    + ", rank -> ...) and initialize the backend inside them");
        }
        return new ThreadsWorld(1).connect(0);
    }
}
