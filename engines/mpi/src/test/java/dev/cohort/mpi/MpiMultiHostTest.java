package dev.cohort.mpi;

import dev.cohort.testkit.EngineWorker;
import dev.cohort.testkit.MpiRun;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * mpirun across two hosts: network namespaces joined by a veth pair, each with its own host name
 * (a UTS namespace), mpirun in the first, Open MPI's daemon started in the second through an
 * rsh agent that enters it (as ssh would log in); 2 ranks each, TCP between the hosts.
 */
class MpiMultiHostTest {

    @TempDir
    Path tmp;

    @Test
    @Timeout(value = 240, unit = TimeUnit.SECONDS)
    void theSuitePassesAcrossTwoNamespacedHosts() {
        MpiRun.okAcrossTwoNewHosts(
                tmp,
                EngineWorker.class,
                List.of("conformance-small", "--distributed-backend", "mpi"),
                Duration.ofSeconds(220));
    }
}
