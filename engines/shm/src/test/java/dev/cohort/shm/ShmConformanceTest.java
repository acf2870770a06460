package dev.cohort.shm;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.testkit.ProcessConformanceTest;

/** The conformance suite on shm with one JVM per rank: whole at 2 and 4 ranks, small at 1, 3 and 8; no file left behind. */
class ShmConformanceTest extends ProcessConformanceTest {

    ShmConformanceTest() {
        super(Engine.named("shm")
                .jvmArgs(ShmProcessesTest.JVM_ARGS)
                .options("--shm-timeout", "60", "--shm-connect-timeout", "30")
                .wholeSuiteAt(2, 4)
                .smallSuiteAt(1, 3, 8)
                .strangersAt(2)
                .afterRun(run -> assertThat(ShmProcessesTest.leftovers(run)).isEmpty()));
    }
}
