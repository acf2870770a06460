package dev.cohort.launcher;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Pins local worker r to its own share of the cores with {@code taskset}: with no more workers
 * than cores, worker r gets cores {@code [r*k, r*k+k-1]}, k = cores / workers. Engines that spin
 * while waiting (shm) lose a scheduler quantum whenever two ranks land on one core; pinning keeps
 * them apart (Gloo's own threads, on the other hand, lose by sharing their caller's core). On with
 * {@code --bind-cores}; never with more workers than cores or without taskset.
 */
final class CoreBinding {

    private static final Path TASKSET = List.of(Path.of("/usr/bin/taskset"), Path.of("/bin/taskset")).stream()
            .filter(Files::isExecutable)
            .findFirst()
            .orElse(null);

    private CoreBinding() {}

    /** The command prefix that pins {@code localRank}, or nothing. */
    static List<String> prefix(LaunchOptions options, int localRank) {
        int cores = Runtime.getRuntime().availableProcessors();
        if (!options.bindCores() || TASKSET == null || options.nprocPerNode() > cores) {
            return List.of();
        }
        int share = cores / options.nprocPerNode();
        int first = localRank * share;
        int last = first + share - 1;
        return List.of(TASKSET.toString(), "-c", first == last ? Integer.toString(first) : first + "-" + last);
    }
}
