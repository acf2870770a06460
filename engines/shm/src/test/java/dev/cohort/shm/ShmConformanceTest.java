package dev.cohort.shm;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.testkit.ProcessConformanceTest;
import java.util.List;

/** The conformance suite on shm with one JVM per rank: whole at 2 and 4 ranks, small at 1 to 8; no file left behind. */
class ShmConformanceTest extends ProcessConformanceTest {

    @Override
    protected String backend() {
        return "shm";
    }

    @Override
    protected List<String> jvmArgs() {
        return List.of("--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED");
    }

    @Override
    protected List<String> options() {
        return List.of("--shm-timeout", "60", "--shm-connect-timeout", "30");
    }

    @Override
    protected int[] fullWorlds() {
        return new int[] {2, 4};
    }

    @Override
    protected int[] smallWorlds() {
        return new int[] {1, 2, 3, 4, 5, 6, 7, 8};
    }

    @Override
    protected void afterRun(String runId) {
        assertThat(ShmProcessesTest.leftovers(runId)).isEmpty();
    }
}
