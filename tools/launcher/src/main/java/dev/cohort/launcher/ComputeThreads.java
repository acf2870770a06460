package dev.cohort.launcher;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Splits the cores among the workers of a node: each worker's compute threads are set to
 * cores / local workers (at least 1), through the variables the common math libraries read,
 * unless the user already set them.
 */
final class ComputeThreads {

    static final List<String> VARIABLES =
            List.of("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "COHORT_COMPUTE_THREADS");

    private ComputeThreads() {
    }

    static int perWorker(int cores, int localWorkers) {
        return Math.max(1, cores / localWorkers);
    }

    /** The variables to add: those of {@link #VARIABLES} that {@code inherited} lacks. */
    static Map<String, String> variables(Map<String, String> inherited, int cores, int localWorkers) {
        String threads = Integer.toString(perWorker(cores, localWorkers));
        Map<String, String> vars = new LinkedHashMap<>();
        for (String name : VARIABLES) {
            if (!inherited.containsKey(name)) {
                vars.put(name, threads);
            }
        }
        return vars;
    }

    /** The one line the launcher prints about it. */
    static String describe(Map<String, String> set, int cores, int localWorkers) {
        if (set.isEmpty()) {
            return "compute threads: keeping " + String.join(", ", VARIABLES) + " as set in the environment";
        }
        return "compute threads: " + String.join(", ", set.keySet()) + "=" + set.values().iterator().next()
                + " per worker (" + cores + " cores / " + localWorkers + " workers on this node); set them to override";
    }
}
