package dev.cohort.launcher;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import dev.cohort.api.Backends;
import dev.cohort.api.LaunchEnvironment;
import dev.cohort.api.Topology;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** auto over the real engines, as the launcher and its workers find them on the class path. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class AutoChoiceTest {

    /** What the launcher gives rank 0 of {@code world} workers, {@code perHost} on each host. */
    private static Map<String, String> layout(int world, int perHost) {
        return new HashMap<>(
                new LaunchEnvironment("127.0.0.1", 29500, new Topology(0, world, 0, perHost, 0), 0, "auto").toMap());
    }

    @Test
    void glooRunsAnyLayoutOnJdk17() {
        assertThat(Backends.auto(layout(4, 4), 17))
                .isEqualTo(new Backends.AutoChoice(
                        "gloo",
                        Runtime.version().feature() >= 22
                                ? "JDK 17 has no foreign-memory API for shared memory; a JDK >= 22 " + "would use shm"
                                : "4 workers on one host: Gloo over TCP"));
        assertThat(Backends.auto(Map.of(), 25).backend()).isEqualTo("none");
    }

    @Test
    void sharedMemoryOnOneHostAndHierAcrossHostsOnJdk22() {
        assumeThat(Runtime.version().feature())
                .as("shm and hier are built on JDK >= 22")
                .isGreaterThanOrEqualTo(22);
        assertThat(Backends.auto(layout(4, 4), 22))
                .isEqualTo(new Backends.AutoChoice("shm", "all 4 workers on one host: shared memory"));
        assertThat(Backends.auto(layout(4, 2), 25))
                .isEqualTo(new Backends.AutoChoice(
                        "hier", "4 workers on 2 hosts: shared memory within each host, Gloo between hosts"));
        Map<String, String> env = layout(4, 2);
        env.put(Backends.ENV_OLDEST_JDK, "17");
        assertThat(Backends.auto(env, 25))
                .isEqualTo(new Backends.AutoChoice(
                        "gloo",
                        "a node of this job runs its "
                                + "workers on JDK 17, which has no foreign-memory API for shared memory, so every node uses gloo; "
                                + "JDK >= 22 on every node would use hier"));
    }
}
