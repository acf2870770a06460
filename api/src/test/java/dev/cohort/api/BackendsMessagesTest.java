package dev.cohort.api;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** What {@link Backends#select} says when the named backend is not there: where the name came from, what to add. */
@Timeout(value = 10, unit = TimeUnit.SECONDS)
class BackendsMessagesTest {

    private static final DistributedBackend NONE = new UnconnectedBackend();

    @Test
    void aMissingEngineNamesItsArtifactAndSaysNoneIsOnTheClassPath() {
        assertThatThrownBy(() -> Backends.select("tcp", Map.of(), Map.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("backend 'tcp' (from the program) is not on the class path: add the Maven artifact "
                        + "dev.cohort:cohort-tcp to the program's dependencies; available: (none on the class path)");
        assertThatThrownBy(() -> Backends.select("GLOO", Map.of(Backends.NONE, NONE), Map.of()))
                .hasMessageContaining("dev.cohort:cohort-gloo")
                .hasMessageEndingWith("available: none");
        assertThatThrownBy(() -> Backends.select("shm", Map.of(), Map.of()))
                .hasMessageContaining("dev.cohort:cohort-shm (JDK >= 22)");
        assertThatThrownBy(() -> Backends.select("hier", Map.of(), Map.of()))
                .hasMessageContaining("dev.cohort:cohort-hier");
        assertThatThrownBy(() -> Backends.select("mpi", Map.of(), Map.of()))
                .hasMessageContaining("dev.cohort:cohort-mpi");
        assertThatThrownBy(() -> Backends.select("threads", Map.of(), Map.of()))
                .hasMessageContaining("dev.cohort:cohort-runtime");
        assertThatThrownBy(() -> Backends.select("horovod", Map.of(), Map.of()))
                .hasMessage("unknown backend 'horovod' (from the program); available: (none on the class path)");
    }

    @Test
    void theMessageSaysWhereTheNameCameFrom() {
        assertThatThrownBy(() -> Backends.select("tcp", "--distributed-backend", Map.of(), Map.of()))
                .hasMessageStartingWith("backend 'tcp' (from --distributed-backend) is not on the class path");
        assertThatThrownBy(() -> Backends.select(null, Map.of(), Map.of(Backends.ENV_BACKEND, "tcp")))
                .hasMessageStartingWith("backend 'tcp' (from COHORT_BACKEND) is not on the class path");
        assertThatThrownBy(() -> Backends.select("tcp", Map.of(), Map.of()))
                .hasMessageStartingWith("backend 'tcp' (from the program)");
    }
}
