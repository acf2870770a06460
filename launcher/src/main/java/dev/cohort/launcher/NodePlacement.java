package dev.cohort.launcher;

import dev.cohort.launcher.control.Command;

/**
 * Where this node's workers sit in the job: {@code workers} consecutive global ranks from
 * {@code firstRank}, in a world of {@code worldSize} ranks on {@code nodes} nodes. On one node it
 * follows from the options; across nodes node 0 says ({@link Command.Job}), because nodes may run
 * different numbers of workers.
 */
record NodePlacement(int worldSize, int nodes, int firstRank, int workers) {

    static NodePlacement of(LaunchOptions options) {
        return new NodePlacement(options.worldSize(), options.nnodes(), options.globalRank(0), options.nprocPerNode());
    }

    static NodePlacement of(LaunchOptions options, Command.Job job) {
        return new NodePlacement(job.worldSize(), options.nnodes(), job.firstRanks().get(options.nodeRank()),
                options.nprocPerNode());
    }

    int globalRank(int localRank) {
        return firstRank + localRank;
    }
}
