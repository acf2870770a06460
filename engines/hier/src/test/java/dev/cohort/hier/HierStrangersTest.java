package dev.cohort.hier;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.testkit.ProcessConformanceTest;

/**
 * Strangers on every port of hier with a job secret, 2 simulated hosts of 2 ranks, Cohort's TCP
 * mesh between hosts (so that every port is Cohort's: the leaders' store and mesh, the meshes and
 * messages of subgroups that span hosts, the world's messages): the subgroup and message suites
 * run while each port the workers open is visited with every kind of stranger, and each visit is
 * refused; among them the ports of a subgroup that spans hosts (its mesh while it connects, its
 * messages for its life).
 */
class HierStrangersTest extends ProcessConformanceTest {

    HierStrangersTest() {
        super(Engine.named("hier")
                .jvmArgs(HierProcessesTest.JVM_ARGS)
                .options("--hier-timeout", "60", "--hier-connect-timeout", "60", "--hier-between", "tcp")
                .wholeSuiteAt()
                .subgroupsAt(0)
                .strangersAt(4)
                .ranksPerHost(2)
                .strangersRefusedBy("hier (split|new-group)-\\S+ \\(global ranks \\[[0-9, ]*\\]\\) rank \\d+ of \\d+: "
                        + "(peer mesh|messages) on \\S+: refused a connection")
                .afterRun(run -> assertThat(HierProcessesTest.leftovers(run)).isEmpty()));
    }
}
