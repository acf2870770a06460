package dev.cohort.launcher.control;

import java.util.List;

/** What the referee tells every node's launcher to do. */
public sealed interface Command {

    /**
     * What every node must know of the others before its workers start, sent once, before the
     * first {@link Start}: the oldest JDK any node runs its workers on ({@code oldestJdk}, on node
     * {@code node}), by which {@code auto} chooses the same backend on every node; and where each
     * node's ranks begin ({@code firstRanks[k]} for node k; nodes may run different numbers of
     * workers) in a world of {@code worldSize}; for an elastic run, where node 0 hosts its generation
     * store ({@code host:port}, empty otherwise); and the nodes that run ({@code nodes}, ascending:
     * with {@code --nnodes MIN:MAX} the run may start without some).
     */
    record Job(
            int oldestJdk, int node, int worldSize, List<Integer> firstRanks, String elasticStore, List<Integer> nodes)
            implements Command {
        public Job {
            firstRanks = List.copyOf(firstRanks);
            nodes = List.copyOf(nodes);
        }
    }

    /**
     * Start the workers of round {@code round} (0 = first start, then the restart count); with
     * {@code join}, as workers of a node that joins the round while it runs (an elastic run).
     */
    record Start(int round, boolean join) implements Command {
        public Start(int round) {
            this(round, false);
        }
    }

    /** Stop the workers of round {@code round}: another node's worker failed. */
    record Stop(int round) implements Command {}

    /**
     * An elastic run lost workers and goes on: generation {@code generation} of round {@code round}
     * is {@code members}, in their new rank order (published in the generation store, where the
     * workers read it; the nodes print it with {@code why}: what was lost).
     */
    record Regroup(int round, int generation, List<Member> members, String why) implements Command {
        public Regroup {
            members = List.copyOf(members);
        }
    }

    /** A worker of an elastic run: its global rank when the round started, and its node. */
    record Member(int rank, int node) {}

    /** The run is over: exit with {@code code}; {@code message} says why. */
    record Exit(int code, String message) implements Command {}
}
