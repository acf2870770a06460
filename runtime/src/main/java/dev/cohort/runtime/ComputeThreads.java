package dev.cohort.runtime;

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
 * {@code OMP_NUM_THREADS}. A variable the user set is kept. The launcher sets them for its workers,
 * cohort-spark for the rank each Spark task starts.
 */
public final class ComputeThreads {

    public static final String OPENMP = "OMP_NUM_THREADS";
    /** A pool of its own inside each OpenMP thread. */
    public static final String OPENBLAS = "OPENBLAS_NUM_THREADS";
    /** The OpenMP pool again, as MKL and libtorch read it. */
    public static final String MKL = "MKL_NUM_THREADS";

    public static final String COHORT = "COHORT_COMPUTE_THREADS";
    public static final List<String> VARIABLES = List.of(OPENMP, OPENBLAS, MKL, COHORT);

    private ComputeThreads() {}

    /** A worker's share of the cores: the most OpenMP threads × OpenBLAS threads that cannot oversubscribe. */
    public static int perWorker(int cores, int localWorkers) {
        return Math.max(1, cores / localWorkers);
    }

    /** The variables to add: those of {@link #VARIABLES} that {@code inherited} lacks, one thread a pool. */
    public static Map<String, String> variables(Map<String, String> inherited) {
        return variables(inherited, 1);
    }

    /**
     * The variables to add: those of {@link #VARIABLES} that {@code inherited} lacks, with {@code
     * threads} OpenMP threads (and one OpenBLAS thread under each) unless {@code inherited} says.
     */
    public static Map<String, String> variables(Map<String, String> inherited, int threads) {
        String openmp = inherited.getOrDefault(OPENMP, Integer.toString(threads));
        Map<String, String> vars = new LinkedHashMap<>();
        vars.put(OPENMP, openmp);
        vars.put(OPENBLAS, "1");
        vars.put(MKL, inherited.getOrDefault(MKL, openmp));
        vars.put(COHORT, openmp);
        vars.keySet().removeAll(inherited.keySet());
        return vars;
    }

    /** The one line the launcher prints about it. */
    public static String describe(Map<String, String> set, int cores, int localWorkers) {
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
