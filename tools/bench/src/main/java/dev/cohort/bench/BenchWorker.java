package dev.cohort.bench;

import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Option;

/**
 * The per-rank side of a benchmark, a hidden command that its benchmark starts in each worker
 * process; {@code --json} (picocli passes annotated fields on to subclasses) names the file the
 * benchmark reads the ranks' results from.
 */
abstract class BenchWorker implements Callable<Integer> {

    @Option(names = "--json", required = true)
    Path json;
}
