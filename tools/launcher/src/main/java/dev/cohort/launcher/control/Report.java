package dev.cohort.launcher.control;

/** What a node's launcher tells the referee about one round of its workers. */
public sealed interface Report {

    int round();

    int node();

    /** Every worker of the node exited with 0. */
    record Done(int round, int node) implements Report {}

    /** A worker failed first on this node; {@code summary} is e.g. "rank 3 exited with code 1". */
    record Failed(int round, int node, int exitCode, String summary) implements Report {}

    /**
     * A worker of an elastic run exited with {@code exitCode} (global rank {@code rank} when the
     * round started); the node's other workers go on until the referee says otherwise.
     */
    record Lost(int round, int node, int rank, int exitCode, String summary) implements Report {}

    /** The node stopped its workers as told by {@link Command.Stop}. */
    record Stopped(int round, int node) implements Report {}
}
