package dev.cohort.launcher;

import dev.cohort.launcher.control.Command;

/**
 * Where this node's workers sit in the job: consecutive global ranks from {@code firstRank}, in a
 * world of {@code worldSize} ranks. On one node it follows from the options; across nodes node 0
 * says ({@link Command.Job}), because nodes may run different numbers of workers.
 */
record NodePlacement(int worldSize, int firstRank) {

    static NodePlacement of(LaunchOptions options) {
        return new NodePlacement(options.worldSize(), options.globalRank(0));
    }

    static NodePlacement of(LaunchOptions options, Command.Job job) {
        return new NodePlacement(job.worldSize(), job.firstRanks().get(options.nodeRank()));
    }

    int globalRank(int localRank) {
        return firstRank + localRank;
    }
}
