package dev.cohort.cli.readme;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.cli.BackendOptions;
import dev.cohort.runtime.threads.ThreadsWorld;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import picocli.CommandLine;

@Timeout(value = 30, unit = TimeUnit.SECONDS)
class ReadmeExampleTest {

    private static String runMain(String... args) {
        PrintStream saved = System.out;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        try {
            Train train = new Train();
            CommandLine cli = new CommandLine(train);
            train.distributed = BackendOptions.add(cli);
            assertThat(cli.execute(args)).isZero();
        } finally {
            System.setOut(saved);
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    @Test
    void runsWithTheThreadsBackend() {
        assertThat(runMain("--distributed-backend", "threads")).contains("1 workers, mean loss 0.500");
    }

    @Test
    void runsOnFourThreadRanksAndTheRootPrintsTheMean() {
        PrintStream saved = System.out;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        try {
            ThreadsWorld.run(4, rank -> {
                Train train = new Train();
                CommandLine cli = new CommandLine(train);
                train.distributed = BackendOptions.add(cli);
                cli.parseArgs("--distr-backend", "threads");
                train.run();
                return null;
            });
        } finally {
            System.setOut(saved);
        }
        // Ranks 0..3 contribute 0.5, 1.0, 1.5, 2.0; only the root prints.
        assertThat(out.toString(StandardCharsets.UTF_8).lines()).containsExactly("4 workers, mean loss 1.250");
    }

    @Test
    void runsUndistributedWithoutTheOption() {
        assertThat(runMain()).contains("1 workers, mean loss 0.500");
    }
}
