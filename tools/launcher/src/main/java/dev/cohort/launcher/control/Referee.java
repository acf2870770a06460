package dev.cohort.launcher.control;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Decides, from the nodes' reports, what every node does next, so that all nodes restart or stop
 * together. Words: a <em>round</em> is one start of the whole group; round {@code r} is restart
 * {@code r}. A round ends when every node has reported on it. The first failure of a round stops
 * the round everywhere; when it ends, the group is restarted while restarts remain, else the run
 * exits with the first failure's exit code. Not thread-safe: one owner calls it.
 */
public final class Referee {

    private final int nodes;
    private final int maxRestarts;
    private int round;
    private final Set<Integer> reported = new HashSet<>();
    private Report.Failed firstFailure;

    public Referee(int nodes, int maxRestarts) {
        this.nodes = nodes;
        this.maxRestarts = maxRestarts;
    }

    /** The command that begins the run. */
    public Command begin() {
        return new Command.Start(0);
    }

    /** The commands for every node after {@code report}; reports on other rounds are ignored. */
    public List<Command> onReport(Report report) {
        List<Command> out = new ArrayList<>();
        if (report.round() != round || !reported.add(report.node())) {
            return out;
        }
        if (report instanceof Report.Failed f && firstFailure == null) {
            firstFailure = f;
            if (reported.size() < nodes) {
                out.add(new Command.Stop(round));
            }
        }
        if (reported.size() < nodes) {
            return out;
        }
        if (firstFailure == null) {
            out.add(new Command.Exit(0, "all workers finished" + (round > 0 ? " after " + round + " restart(s)" : "")));
        } else if (round < maxRestarts) {
            round++;
            reported.clear();
            firstFailure = null;
            out.add(new Command.Start(round));
        } else {
            String restarts = maxRestarts == 0 ? "no restarts allowed (--max-restarts 0)"
                    : "all " + maxRestarts + " restart(s) used";
            out.add(new Command.Exit(firstFailure.exitCode(), firstFailure.summary() + "; " + restarts));
        }
        return out;
    }

    public int round() {
        return round;
    }
}
