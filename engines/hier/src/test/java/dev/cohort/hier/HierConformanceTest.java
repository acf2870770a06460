package dev.cohort.hier;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.testkit.ProcessConformanceTest;

/** The whole conformance suite on hier with one JVM per rank: two simulated hosts of two ranks. */
class HierConformanceTest extends ProcessConformanceTest {

    HierConformanceTest() {
        super(Engine.named("hier")
                .jvmArgs(HierProcessesTest.JVM_ARGS)
                .options("--hier-timeout", "60", "--hier-connect-timeout", "60")
                .wholeSuiteAt(4)
                .ranksPerHost(2)
                .afterRun(run -> assertThat(HierProcessesTest.leftovers(run)).isEmpty()));
    }
}
