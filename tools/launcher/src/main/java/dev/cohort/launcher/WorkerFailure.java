package dev.cohort.launcher;

import java.util.List;

/**
 * The first worker of a round that ended badly.
 *
 * @param restart   the round: 0 for the first start, then the restart count
 * @param rank      the worker's global rank
 * @param status    how it ended
 * @param lastLines its last lines of output (stdout and stderr), oldest first
 */
public record WorkerFailure(int restart, int rank, ExitStatus status, List<String> lastLines) {

    public WorkerFailure {
        lastLines = List.copyOf(lastLines);
    }

    /** "rank 1 exited with code 3". */
    public String summary() {
        return "rank " + rank + " " + status.describe();
    }
}
