package dev.cohort.gloo;

import dev.cohort.testkit.ProcessConformanceTest;

/** The whole conformance suite on gloo with one JVM per rank, at world sizes 2 to 4. */
class GlooConformanceTest extends ProcessConformanceTest {

    GlooConformanceTest() {
        super(Engine.named("gloo")
                .options("--gloo-timeout", "60", "--gloo-connect-timeout", "60")
                .wholeSuiteAt(2, 3));
    }
}
