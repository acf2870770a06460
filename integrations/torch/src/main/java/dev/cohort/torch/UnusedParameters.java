package dev.cohort.torch;

import java.util.List;

/**
 * Which parameters had a gradient on this rank in an iteration of {@link GradientBuckets}, and the
 * one log line a rank writes when it first sees a parameter without one.
 */
final class UnusedParameters {

    private static final System.Logger LOG = System.getLogger(GradientBuckets.class.getName());

    /** DDP's {@code find_unused_parameters}: the ranks agree each step which parameters no rank used. */
    final boolean find;

    private final int rank;
    private boolean told;

    UnusedParameters(boolean find, int rank) {
        this.find = find;
        this.rank = rank;
    }

    /**
     * 1 for each parameter (by id) that has a gradient on this rank in this iteration, else 0;
     * logs the first parameter without one, once (and then, without {@link #find}, looks no more: null).
     */
    int[] usedHere(List<GradientBucket> buckets, int parameters) {
        if (!find && told) {
            return null;
        }
        int[] used = new int[parameters];
        for (GradientBucket b : buckets) {
            for (int i = 0; i < b.params.size(); i++) {
                used[b.ids.get(i)] = b.ready[i] || b.params.get(i).grad().defined() ? 1 : 0;
            }
        }
        for (int id = 0; !told && id < used.length; id++) {
            if (used[id] == 0) {
                told = true;
                int unused = id;
                LOG.log(
                        System.Logger.Level.INFO,
                        () -> "rank " + rank + ": parameter " + unused + " (reverse "
                                + "registration order) has no gradient in this step: "
                                + (find
                                        ? "where no rank has one it keeps none"
                                        : "averaged as zeros, which optimizers with momentum "
                                                + "or weight decay still apply (option findUnusedParameters leaves parameters no rank used alone)"));
            }
        }
        return used;
    }
}
