package dev.cohort.launcher;

import java.util.List;

/**
 * How a launch ended.
 *
 * @param exitCode the launcher's exit code: 0 when every worker finished cleanly, else the failed
 *                 worker's exit code (128 + signal when killed by a signal)
 * @param restarts how often the group was restarted
 * @param failures the first failure of each failed round that this node saw, in order
 * @param message  one line saying why the launch ended
 */
public record LaunchResult(int exitCode, int restarts, List<WorkerFailure> failures, String message) {

    public LaunchResult {
        failures = List.copyOf(failures);
    }

    public boolean succeeded() {
        return exitCode == 0;
    }
}
