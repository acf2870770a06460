package dev.cohort.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import picocli.CommandLine;

/**
 * The launcher starts workers of the mpi engine through mpirun only when {@link Workers} finds the
 * engine in the arguments each command hands its workers; nothing is measured.
 */
class WorkersTest {

    @Test
    @Timeout(30)
    void everyCommandsWorkerArgumentsNameItsEngine() {
        CollectivesBenchmark collectives = new CollectivesBenchmark();
        new CommandLine(collectives).parseArgs("--backend", "mpi");
        TrainBenchmark train = new TrainBenchmark();
        new CommandLine(train).parseArgs("--backend", "mpi");
        DataBenchmark data = new DataBenchmark();
        new CommandLine(data).parseArgs("--backend", "mpi", "--data", "/tmp/none");

        assertThat(Workers.backend(collectives.settings.asArgs())).isEqualTo("mpi");
        assertThat(Workers.backend(train.settings.asArgs())).isEqualTo("mpi");
        assertThat(Workers.backend(data.settings.asArgs())).isEqualTo("mpi");
    }

    @Test
    @Timeout(30)
    void theEngineIsFoundInEitherSpelling() {
        assertThat(Workers.backend(List.of("--steps", "5", "--backend", "mpi"))).isEqualTo("mpi");
        assertThat(Workers.backend(List.of("--backend=mpi", "--steps=5"))).isEqualTo("mpi");
        assertThat(Workers.backend(List.of("--steps=5"))).isNull();
    }
}
