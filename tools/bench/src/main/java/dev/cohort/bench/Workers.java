package dev.cohort.bench;

import dev.cohort.launcher.LaunchOptions;
import dev.cohort.launcher.LaunchResult;
import dev.cohort.launcher.Launcher;
import dev.cohort.launcher.WorkerProgram;
import java.io.IOException;
import java.util.List;

/**
 * Starts the benchmark's per-rank side on one node through the launcher, one compute thread each,
 * pinned to their own cores for the spinning shm engine only ({@code COHORT_BIND_CORES=1|0} decides
 * for every engine).
 */
final class Workers {

    private Workers() {
    }

    /** Runs {@code BenchMain args} on this node's workers of {@code world}; returns the launcher's exit code. */
    static int launch(int world, Nodes nodes, String backend, List<String> args) throws IOException {
        String env = System.getenv("COHORT_BIND_CORES");
        boolean bind = env != null ? !env.equals("0") : backend.equalsIgnoreCase("shm");
        LaunchOptions options = nodes.launchOptions(world).bindCores(bind)
                .addEnvironment("OMP_NUM_THREADS", "1").addEnvironment("OPENBLAS_NUM_THREADS", "1")
                .addEnvironment("COHORT_COMPUTE_THREADS", "1").build();
        LaunchResult result = new Launcher(options, WorkerProgram.mainClass(BenchMain.class.getName(), args)).run();
        if (!result.succeeded()) {
            System.err.println("cohort bench: " + result.message());
        }
        return result.exitCode();
    }
}
