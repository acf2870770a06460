package dev.cohort.launcher;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Compute threads per worker that never oversubscribe the cores. A worker's math runs in nested
 * pools that multiply: libtorch's OpenMP pool ({@code OMP_NUM_THREADS}; libtorch sizes it by
 * {@code MKL_NUM_THREADS} first, and MKL's threads are OpenMP's) calls BLAS from each of its
 * threads, and OpenBLAS starts a pthread pool of its own ({@code OPENBLAS_NUM_THREADS}) under each.
 * Every pool defaults to 1 (as torchrun sets {@code OMP_NUM_THREADS} for several workers): measured with
 * scripts/bench-threads.sh, a second OpenMP thread made a small model's training many times slower
 * on 2 shared CPUs, and a worker's share of the cores (cores / local workers) is only the most that
 * cannot oversubscribe, which the launcher's line names. {@code MKL_NUM_THREADS} and {@code
 * COHORT_COMPUTE_THREADS} (what Cohort's examples pass to {@code torch.set_num_threads}) follow
 * {@code OMP_NUM_THREADS}. A variable the user set is kept.
 */
final class ComputeThreads {

    static final String OPENMP = "OMP_NUM_THREADS";
    /** A pool of its own inside each OpenMP thread. */
    static final String OPENBLAS = "OPENBLAS_NUM_THREADS";
    /** The OpenMP pool again, as MKL and libtorch read it. */
    static final String MKL = "MKL_NUM_THREADS";

    static final String COHORT = "COHORT_COMPUTE_THREADS";
    static final List<String> VARIABLES = List.of(OPENMP, OPENBLAS, MKL, COHORT);

    private ComputeThreads() {}

    /** A worker's share of the cores: the most OpenMP threads × OpenBLAS threads that cannot oversubscribe. */
    static int perWorker(int cores, int localWorkers) {
        return Math.max(1, cores / localWorkers);
    }

    /** The variables to add: those of {@link #VARIABLES} that {@code inherited} lacks. */
    static Map<String, String> variables(Map<String, String> inherited) {
        String openmp = inherited.getOrDefault(OPENMP, "1");
        Map<String, String> vars = new LinkedHashMap<>();
        vars.put(OPENMP, openmp);
        vars.put(OPENBLAS, "1");
        vars.put(MKL, inherited.getOrDefault(MKL, openmp));
        vars.put(COHORT, openmp);
        vars.keySet().removeAll(inherited.keySet());
        return vars;
    }

    /** The one line the launcher prints about it. */
    static String describe(Map<String, String> set, int cores, int localWorkers) {
        int share = perWorker(cores, localWorkers);
        String most = " (" + cores + " cores / " + localWorkers + " workers on this node: OMP_NUM_THREADS × "
                + "OPENBLAS_NUM_THREADS up to " + share + " per worker cannot oversubscribe)";
        if (set.isEmpty()) {
            return "compute threads: keeping " + String.join(", ", VARIABLES) + " as set in the environment" + most;
        }
        StringBuilder sb = new StringBuilder("compute threads per worker: ");
        set.forEach((name, value) -> sb.append(name).append('=').append(value).append(", "));
        sb.setLength(sb.length() - 2);
        return sb + most + "; set them to override";
    }
}
