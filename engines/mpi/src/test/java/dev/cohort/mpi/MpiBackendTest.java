package dev.cohort.mpi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** What the backend says about the MPI library it is given, before anything is initialized. */
class MpiBackendTest {

    private static MpiBackend with(String library) {
        return new MpiBackend(new MpiOptions().library(library), Map.of());
    }

    @Test
    void aLibraryThatIsNotOpenMpisIsRefusedByName() {
        // Any shared library without Open MPI's globals stands for MPICH's, whose handles are integers.
        MpiBackend backend = with("libc.so.6");
        assertThat(backend.isAvailable()).isFalse();
        assertThat(backend.unavailableReason())
                .contains("libc.so.6 is not Open MPI's library")
                .contains("MPICH")
                .contains("--mpi-library");
    }

    @Test
    void aMissingLibraryIsNamedWithHowToInstallOpenMpi() {
        MpiBackend backend = with("/nonexistent/libmpi.so.40");
        assertThat(backend.isAvailable()).isFalse();
        assertThat(backend.unavailableReason())
                .contains("/nonexistent/libmpi.so.40")
                .contains("could not be loaded")
                .contains("apt-get install openmpi-bin");
    }

    @Test
    void theSystemsOpenMpiIsAvailable() {
        assumeTrue(Files.exists(Path.of("/usr/bin/mpirun")), "Open MPI is not installed");
        MpiBackend backend = with(MpiOptions.DEFAULT_LIBRARY);
        assertThat(backend.isAvailable()).as(backend.unavailableReason()).isTrue();
    }
}
