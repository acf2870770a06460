package dev.cohort.tcp;

import dev.cohort.testkit.ProcessConformanceTest;

/** The conformance suite on tcp with one JVM per rank: the whole suite at 2 and 3 ranks, the small one at 1 and 4. */
class TcpConformanceTest extends ProcessConformanceTest {

    TcpConformanceTest() {
        super(Engine.named("tcp")
                .options("--tcp-timeout", "60", "--tcp-connect-timeout", "60")
                .wholeSuiteAt(2, 3)
                .smallSuiteAt(1, 4)
                .strangersAt(3));
    }
}
