package dev.cohort.hier;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.testkit.ProcessConformanceTest;
import java.util.List;

/** The whole conformance suite on hier with one JVM per rank: two simulated hosts of two ranks. */
class HierConformanceTest extends ProcessConformanceTest {

    @Override
    protected String backend() {
        return "hier";
    }

    @Override
    protected List<String> jvmArgs() {
        return HierProcessesTest.JVM_ARGS;
    }

    @Override
    protected List<String> options() {
        return List.of("--hier-timeout", "60", "--hier-connect-timeout", "60");
    }

    @Override
    protected int[] fullWorlds() {
        return new int[] {4};
    }

    @Override
    protected int ranksPerHost(int world) {
        return 2;
    }

    @Override
    protected void afterRun(String runId) {
        assertThat(HierProcessesTest.leftovers(runId)).isEmpty();
    }
}
