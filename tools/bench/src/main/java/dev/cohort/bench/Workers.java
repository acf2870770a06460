package dev.cohort.bench;

import dev.cohort.api.Backends;
import dev.cohort.launcher.LaunchOptions;
import dev.cohort.launcher.LaunchResult;
import dev.cohort.launcher.Launcher;
import dev.cohort.launcher.WorkerProgram;
import java.io.IOException;
import java.util.List;

/**
 * Starts the benchmark's per-rank side on one node through the launcher, one compute thread each,
 * pinned to their own cores where the caller asks ({@code COHORT_BIND_CORES=1|0} decides for every
 * run): the collectives benchmark pins the spinning shm engine; training pins nothing, since a
 * process held to one core shares it between its compute thread, its engine thread and the JVM's own
 * (with 2 ranks on 2 CPUs, pinned shm trained at 5,300–7,000 samples/s, unpinned at 8,700–9,300).
 */
final class Workers {

    private Workers() {}

    /**
     * Runs {@code BenchMain args} on this node's workers of {@code world}, pinned if {@code pin} (or as
     * COHORT_BIND_CORES says); returns the launcher's exit code.
     */
    static int launch(int world, Nodes nodes, boolean pin, List<String> args) throws IOException {
        String env = System.getenv("COHORT_BIND_CORES");
        boolean bind = env != null ? !env.equals("0") : pin;
        LaunchOptions.Builder options = nodes.launchOptions(world)
                .bindCores(bind)
                .addEnvironment("OMP_NUM_THREADS", "1")
                .addEnvironment("OPENBLAS_NUM_THREADS", "1")
                .addEnvironment("COHORT_COMPUTE_THREADS", "1");
        if ("mpi".equalsIgnoreCase(backend(args))) {
            // The launcher starts workers of the mpi engine as one MPI job, through mpirun.
            options.addEnvironment(Backends.ENV_BACKEND, "mpi");
        }
        LaunchResult result =
                new Launcher(options.build(), WorkerProgram.mainClass(BenchMain.class.getName(), args)).run();
        if (!result.succeeded()) {
            System.err.println("cohort bench: " + result.message());
        }
        return result.exitCode();
    }

    /** The engine {@code args} name ({@code --backend NAME} or {@code --backend=NAME}), or null. */
    static String backend(List<String> args) {
        for (int i = 0; i < args.size(); i++) {
            if (args.get(i).startsWith("--backend=")) {
                return args.get(i).substring("--backend=".length());
            }
            if (args.get(i).equals("--backend") && i + 1 < args.size()) {
                return args.get(i + 1);
            }
        }
        return null;
    }
}
