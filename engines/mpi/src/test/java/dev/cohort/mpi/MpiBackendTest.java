package dev.cohort.mpi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** What the backend says about the MPI library it is given, before anything is initialized. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class MpiBackendTest {

    private static MpiBackend with(String library) {
        return new MpiBackend(new MpiOptions().library(library), Map.of());
    }

    /**
     * A library that is not Open MPI's (any shared library without its globals stands for MPICH's,
     * whose handles are integers), and one that is missing, are refused by name, saying what to do.
     */
    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            value = {
                "libc.so.6                 | libc.so.6 is not Open MPI's library | MPICH                | --mpi-library",
                "/nonexistent/libmpi.so.40 | /nonexistent/libmpi.so.40           | could not be loaded | apt-get install openmpi-bin"
            })
    void aLibraryThatIsNotOpenMpisOrIsMissingIsRefusedByName(String library, String names, String why, String fix) {
        MpiBackend backend = with(library);
        assertThat(backend.isAvailable()).isFalse();
        assertThat(backend.unavailableReason()).contains(names).contains(why).contains(fix);
    }

    @Test
    void theSystemsOpenMpiIsAvailable() {
        assumeTrue(Files.exists(Path.of("/usr/bin/mpirun")), "Open MPI is not installed");
        MpiBackend backend = with(MpiOptions.DEFAULT_LIBRARY);
        assertThat(backend.isAvailable()).as(backend.unavailableReason()).isTrue();
    }
}
