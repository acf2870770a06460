package dev.cohort.tcp.algorithms;

import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.CollectiveMismatchException;

/**
 * The first time the ranks of a mesh group disagreed on a call: after it their connections (and
 * Gloo's tags, where Gloo runs below) are out of step, so the group refuses every later call.
 */
public final class Disagreement {

    private volatile CollectiveMismatchException first;

    /**
     * Throws, for {@code call} of rank {@code who} of group {@code label}, when ranks disagreed
     * before.
     */
    public void refuseIfSeen(String label, String who, Collective call) {
        CollectiveMismatchException earlier = first;
        if (earlier != null) {
            throw new CollectiveMismatchException(label + " " + who + ": " + call.describe()
                    + " refused: the group is unusable after ranks disagreed earlier (restart the job):\n"
                    + earlier.getMessage());
        }
    }

    /** Keeps {@code e} (unless an earlier disagreement was kept) and returns it, to be thrown. */
    public CollectiveMismatchException seen(CollectiveMismatchException e) {
        if (first == null) {
            first = e;
        }
        return e;
    }
}
