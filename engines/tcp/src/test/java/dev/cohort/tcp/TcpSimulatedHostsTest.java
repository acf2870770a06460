package dev.cohort.tcp;

import dev.cohort.testkit.ProcessConformanceTest;

/** 4 ranks as 2 simulated hosts of 2 on this machine: a node group per host beside the world. */
class TcpSimulatedHostsTest extends ProcessConformanceTest {

    TcpSimulatedHostsTest() {
        super(Engine.named("tcp")
                .options("--tcp-timeout", "60", "--tcp-connect-timeout", "60")
                .ranksPerHost(2)
                .subgroupsAt(0)
                .wholeSuiteAt()
                .smallSuiteAt(4));
    }
}
