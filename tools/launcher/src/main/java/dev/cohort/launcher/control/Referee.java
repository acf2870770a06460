package dev.cohort.launcher.control;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/**
 * Decides, from the nodes' reports, what every node does next, so that all nodes restart or stop
 * together. Words: a <em>round</em> is one start of the whole group; round {@code r} is restart
 * {@code r}. A round ends when every node has reported on it. The first failure of a round stops
 * the round everywhere; when it ends, the group is restarted while restarts remain, else the run
 * exits with the first failure's exit code.
 *
 * <p>In an elastic run ({@code elastic} &gt; 0, the fewest workers it goes on with) a lost worker
 * or node does not fail the round while that many workers are left: the others form the round's
 * next <em>generation</em> ({@link Command.Regroup}), in their old rank order. Below the minimum,
 * the loss is the round's first failure. Not thread-safe: one owner calls it.
 */
public final class Referee {

    private final int nodes;
    private final int maxRestarts;
    private final int elastic;
    private final List<Integer> workers = new ArrayList<>();
    /** The next global rank to give a joining worker. */
    private int nextRank;

    private int round;
    private int generation;
    private final Set<Integer> reported = new HashSet<>();
    /** The round's workers still counted on: global rank (at the round's start) to node. */
    private final Map<Integer, Integer> alive = new TreeMap<>();

    private Report.Failed firstFailure;

    public Referee(int nodes, int maxRestarts) {
        this(nodes, maxRestarts, 0);
    }

    /** A referee of an elastic run when {@code elastic} (the fewest workers it goes on with) is positive. */
    public Referee(int nodes, int maxRestarts, int elastic) {
        this.nodes = nodes;
        this.maxRestarts = maxRestarts;
        this.elastic = elastic;
    }

    /** The command that begins the run of {@code workersPerNode.get(k)} workers on node k. */
    public Command begin(List<Integer> workersPerNode) {
        if (workersPerNode.size() != nodes) {
            throw new IllegalArgumentException("workers of " + workersPerNode.size() + " nodes, expected " + nodes);
        }
        workers.clear();
        workers.addAll(workersPerNode);
        startRound();
        return new Command.Start(0);
    }

    private void startRound() {
        reported.clear();
        for (int node = 0; node < workers.size(); node++) {
            if (workers.get(node) == 0) {
                reported.add(node); // not in the run (--nnodes MIN:MAX started without it)
            }
        }
        firstFailure = null;
        generation = 0;
        alive.clear();
        int rank = 0;
        for (int node = 0; node < workers.size(); node++) {
            for (int w = 0; w < workers.get(node); w++) {
                alive.put(rank++, node);
            }
        }
        nextRank = rank;
    }

    /** A node taken into a running round: its workers' first global rank, and the generation that has them. */
    public record Admission(int firstRank, Command.Regroup regroup) {}

    /**
     * Node {@code node} joins the running round with {@code count} workers (an elastic run): they
     * get fresh global ranks and are in the next generation, which the members move to at their
     * next boundary (or at a loss, whichever comes first). Empty when the run cannot take it: not
     * elastic, the round failing, or the node already has workers in it.
     */
    public Optional<Admission> onJoin(int node, int count) {
        if (elastic == 0 || firstFailure != null || alive.containsValue(node) || node < 0 || node >= nodes) {
            return Optional.empty();
        }
        int first = nextRank;
        for (int w = 0; w < count; w++) {
            alive.put(nextRank++, node);
        }
        workers.set(node, count);
        reported.remove(node);
        return Optional.of(new Admission(first, regroup("node " + node + " joins with " + count + " worker(s)")));
    }

    /** One more than the highest global rank given in this round. */
    public int ranksGiven() {
        return nextRank;
    }

    /** The commands for every node after {@code report}; reports on other rounds are ignored. */
    public List<Command> onReport(Report report) {
        List<Command> out = new ArrayList<>();
        if (report.round() != round) {
            return out;
        }
        if (report instanceof Report.Lost lost) {
            return onLost(lost);
        }
        if (!reported.add(report.node())) {
            return out;
        }
        if (report instanceof Report.Failed f && firstFailure == null) {
            firstFailure = f;
            if (reported.size() < nodes) {
                out.add(new Command.Stop(round));
            }
        }
        out.addAll(endIfAllReported());
        return out;
    }

    private List<Command> onLost(Report.Lost lost) {
        List<Command> out = new ArrayList<>();
        if (reported.contains(lost.node()) || alive.remove(lost.rank()) == null || firstFailure != null) {
            return out;
        }
        if (alive.size() >= elastic && !alive.isEmpty()) {
            out.add(regroup(lost.summary()));
            return out;
        }
        firstFailure = new Report.Failed(
                round,
                lost.node(),
                lost.exitCode(),
                lost.summary() + "; fewer than --elastic " + elastic + " workers would be left");
        out.add(new Command.Stop(round));
        return out;
    }

    /**
     * Node {@code node}'s launcher is gone (its link broke): in an elastic run with enough workers
     * left elsewhere, the commands that let the others go on without it; empty otherwise (the
     * caller ends the run).
     */
    public Optional<List<Command>> onNodeLost(int node, String why) {
        if (elastic == 0 || firstFailure != null || reported.contains(node)) {
            return Optional.empty();
        }
        alive.values().removeIf(n -> n == node);
        if (alive.size() < elastic || alive.isEmpty()) {
            return Optional.empty();
        }
        reported.add(node);
        List<Command> out = new ArrayList<>();
        out.add(regroup(why));
        out.addAll(endIfAllReported());
        return Optional.of(out);
    }

    private Command.Regroup regroup(String why) {
        generation++;
        List<Command.Member> members = new ArrayList<>();
        alive.forEach((rank, node) -> members.add(new Command.Member(rank, node)));
        return new Command.Regroup(round, generation, members, why);
    }

    private List<Command> endIfAllReported() {
        if (reported.size() < nodes) {
            return List.of();
        }
        if (firstFailure == null) {
            String regrouped =
                    generation == 0 ? "" : " (" + alive.size() + " of them in generation " + generation + ")";
            return List.of(new Command.Exit(
                    0, "all workers finished" + regrouped + (round > 0 ? " after " + round + " restart(s)" : "")));
        }
        if (round < maxRestarts) {
            round++;
            startRound();
            return List.of(new Command.Start(round));
        }
        String restarts =
                maxRestarts == 0 ? "no restarts allowed (--max-restarts 0)" : "all " + maxRestarts + " restart(s) used";
        return List.of(new Command.Exit(firstFailure.exitCode(), firstFailure.summary() + "; " + restarts));
    }

    public int round() {
        return round;
    }
}
