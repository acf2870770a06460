package dev.cohort.gloo;

import dev.cohort.testkit.EngineFailureSuite;
import java.util.List;

/** Timeouts, lost peers and wrong launches on Gloo fail in time, with errors naming rank, operation and peer. */
class GlooFailureTest extends EngineFailureSuite {

    GlooFailureTest() {
        super(
                GlooBackend.NAME,
                6.0,
                port -> List.of("CONNECT FAILED rank 1 of 2: could not reach the TCP store at 127.0.0.1:" + port),
                port -> List.of("cannot host the TCP store on 127.0.0.1:" + port, "MASTER_PORT taken"));
    }
}
