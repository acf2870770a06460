package dev.cohort.launcher;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Splits the cores among the workers of a node without oversubscribing them. A worker's math runs
 * in nested pools: libtorch's OpenMP pool calls BLAS from each of its threads, and OpenBLAS starts
 * a pthread pool of its own ({@code OPENBLAS_NUM_THREADS}) under each, so the two multiply. The
 * OpenMP pool therefore gets the worker's share of the cores (cores / local workers, at least 1),
 * and OpenBLAS's pool 1; when the user sets OpenBLAS's, the OpenMP pool gets the share divided by
 * it. {@code MKL_NUM_THREADS} names the same OpenMP pool (libtorch sizes its pool by it, ahead of
 * {@code OMP_NUM_THREADS}, and MKL's threads are OpenMP's), so it follows {@code OMP_NUM_THREADS},
 * as does {@code COHORT_COMPUTE_THREADS} (what Cohort's examples pass to {@code
 * torch.set_num_threads}). A variable the user set is kept.
 */
final class ComputeThreads {

    static final String OPENMP = "OMP_NUM_THREADS";
    /** A pool of its own inside each OpenMP thread, so 1 by default. */
    static final String OPENBLAS = "OPENBLAS_NUM_THREADS";
    /** The OpenMP pool again, as MKL and libtorch read it. */
    static final String MKL = "MKL_NUM_THREADS";
    static final String COHORT = "COHORT_COMPUTE_THREADS";
    static final List<String> VARIABLES = List.of(OPENMP, OPENBLAS, MKL, COHORT);

    private ComputeThreads() {
    }

    /** A worker's share of the cores. */
    static int perWorker(int cores, int localWorkers) {
        return Math.max(1, cores / localWorkers);
    }

    /** The variables to add: those of {@link #VARIABLES} that {@code inherited} lacks. */
    static Map<String, String> variables(Map<String, String> inherited, int cores, int localWorkers) {
        int share = perWorker(cores, localWorkers);
        int openblas = threads(inherited.get(OPENBLAS));
        String openmp = inherited.containsKey(OPENMP) ? inherited.get(OPENMP) : Integer.toString(Math.max(1, share / openblas));
        Map<String, String> vars = new LinkedHashMap<>();
        vars.put(OPENMP, openmp);
        vars.put(OPENBLAS, "1");
        vars.put(MKL, openmp);
        vars.put(COHORT, openmp);
        vars.keySet().removeAll(inherited.keySet());
        return vars;
    }

    /** A thread count as the libraries read it: a positive number, else 1. */
    private static int threads(String value) {
        if (value == null) {
            return 1;
        }
        try {
            return Math.max(1, Integer.parseInt(value.trim()));
        } catch (NumberFormatException e) {
            return 1;
        }
    }

    /** The one line the launcher prints about it. */
    static String describe(Map<String, String> set, int cores, int localWorkers) {
        if (set.isEmpty()) {
            return "compute threads: keeping " + String.join(", ", VARIABLES) + " as set in the environment";
        }
        StringBuilder sb = new StringBuilder("compute threads per worker: ");
        set.forEach((name, value) -> sb.append(name).append('=').append(value).append(", "));
        sb.setLength(sb.length() - 2);
        return sb + " (" + cores + " cores / " + localWorkers + " workers on this node; OpenBLAS's pool runs inside "
                + "each OpenMP thread, so it gets 1); set them to override";
    }
}
