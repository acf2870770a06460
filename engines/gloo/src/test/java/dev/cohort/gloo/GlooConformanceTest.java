package dev.cohort.gloo;

import dev.cohort.testkit.ProcessConformanceTest;
import java.util.List;

/** The whole conformance suite on gloo with one JVM per rank, at world sizes 2 to 4. */
class GlooConformanceTest extends ProcessConformanceTest {

    @Override
    protected String backend() {
        return "gloo";
    }

    @Override
    protected List<String> options() {
        return List.of("--gloo-timeout", "60", "--gloo-connect-timeout", "60");
    }

    @Override
    protected int[] fullWorlds() {
        return new int[] {2, 3, 4};
    }
}
