package dev.cohort.launcher;

import dev.cohort.launcher.control.Command;

/**
 * Where this node's workers sit in the job: consecutive global ranks from {@code firstRank}, in a
 * world of {@code worldSize} ranks; the node is {@code groupRank} of the {@code groups} nodes that
 * run. On one node it follows from the options; across nodes node 0 says ({@link Command.Job}),
 * because nodes may run different numbers of workers and, with {@code --nnodes MIN:MAX}, the run
 * may start without some nodes.
 */
record NodePlacement(int worldSize, int firstRank, int groupRank, int groups) {

    static NodePlacement of(LaunchOptions options) {
        return new NodePlacement(options.worldSize(), options.globalRank(0), options.nodeRank(), options.nnodes());
    }

    static NodePlacement of(LaunchOptions options, Command.Job job) {
        return new NodePlacement(
                job.worldSize(),
                job.firstRanks().get(options.nodeRank()),
                job.nodes().indexOf(options.nodeRank()),
                job.nodes().size());
    }

    int globalRank(int localRank) {
        return firstRank + localRank;
    }
}
