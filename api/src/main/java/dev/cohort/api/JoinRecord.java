package dev.cohort.api;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * How a launcher learns that its workers joined a group: it names a folder in {@value #ENV}, and
 * every worker whose backend {@link DistributedBackend#initialize() initializes} leaves an empty
 * file there. A run whose workers all exit 0 and left none never trained together (the program
 * never called {@code initialize()}, or its own argument parser exited first), which
 * {@code ./cohort run} says instead of "all workers finished".
 */
public final class JoinRecord {

    /** The folder a launcher gives its workers for their records; unset, nothing is recorded. */
    public static final String ENV = "COHORT_JOINED_DIR";

    private JoinRecord() {}

    /** Leaves this process's record in {@code env}'s {@value #ENV} folder, if it names one. */
    static void record(Map<String, String> env) {
        String dir = env.get(ENV);
        if (dir == null || dir.isBlank()) {
            return;
        }
        try {
            Files.createFile(Path.of(
                    dir,
                    "rank-" + env.getOrDefault(LaunchEnvironment.RANK, "?").trim() + "-pid-"
                            + ProcessHandle.current().pid()));
        } catch (IOException | RuntimeException e) {
            // Best effort: without the record, the launcher only warns at the end of the run.
            System.getLogger(JoinRecord.class.getName())
                    .log(System.Logger.Level.DEBUG, "could not record the join in " + dir + ": " + e);
        }
    }

    /** Whether any worker left a record in {@code dir}. */
    public static boolean anyIn(Path dir) {
        try (var records = Files.list(dir)) {
            return records.findAny().isPresent();
        } catch (IOException e) {
            return false;
        }
    }
}
