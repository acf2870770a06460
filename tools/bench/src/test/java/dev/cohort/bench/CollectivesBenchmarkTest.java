package dev.cohort.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import picocli.CommandLine;

/** What {@code bench collectives} hands on to each {@code collectives-worker}; nothing is measured. */
class CollectivesBenchmarkTest {

    /** The worker that the command's settings start: parsed as the worker process parses them. */
    private static CollectivesBenchmark.Worker workerOf(String... commandArgs) {
        CollectivesBenchmark command = new CollectivesBenchmark();
        new CommandLine(command).parseArgs(commandArgs);
        List<String> args = new ArrayList<>(List.of("--json", "out.json", "--in-place=false"));
        args.addAll(command.settings.asArgs());
        CollectivesBenchmark.Worker worker = new CollectivesBenchmark.Worker();
        new CommandLine(worker).parseArgs(args.toArray(String[]::new));
        return worker;
    }

    @Test
    @Timeout(30)
    void aWorkerGetsTheCommandsSettings() {
        CollectivesBenchmark.Worker worker = workerOf(
                "--backend",
                "SHM",
                "--sizes",
                "4K,1M",
                "--warmup-ms",
                "10",
                "--engine-option=--shm-arena=1G",
                "--engine-option",
                "--no-check");

        assertThat(worker.s.backend).isEqualTo("shm");
        assertThat(worker.s.sizeList()).containsExactly(4 * Sizes.KIB, Sizes.MIB);
        assertThat(worker.s.warmupMs).isEqualTo(10);
        assertThat(worker.s.engineOptions).containsExactly("--shm-arena=1G", "--no-check");
    }

    @Test
    @Timeout(30)
    void withoutOptionsAWorkerGetsTheDefaults() {
        CollectivesBenchmark.Worker worker = workerOf();

        assertThat(worker.s.backend).isEqualTo("gloo");
        assertThat(worker.s.sizeList()).isEqualTo(CollectivesBenchmark.DEFAULT_SIZES);
        assertThat(worker.s.warmupMs).isEqualTo(6000);
        assertThat(worker.s.engineOptions).isEmpty();
    }

    @Test
    @Timeout(30)
    void theWorkerLineOfTheTwoHostsScriptStillParses() {
        // scripts/bench-two-hosts.sh starts workers itself, with --in-place=false
        CollectivesBenchmark.Worker worker = new CollectivesBenchmark.Worker();
        new CommandLine(worker)
                .parseArgs(
                        "--backend",
                        "tcp",
                        "--sizes",
                        "64K",
                        "--json",
                        "r.json",
                        "--in-place=false",
                        "--warmup-ms",
                        "6000");

        assertThat(worker.s.backend).isEqualTo("tcp");
        assertThat(worker.s.sizeList()).containsExactly(64 * Sizes.KIB);
        assertThat(worker.inPlace).isFalse();
        assertThat(worker.json.toString()).isEqualTo("r.json");
    }
}
