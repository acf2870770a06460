package dev.cohort.gloo;

import dev.cohort.testkit.EngineFailureSuite;
import java.util.List;

/** Timeouts, lost peers and wrong launches on Gloo fail in time, with errors naming rank, operation and peer. */
class GlooFailureTest extends EngineFailureSuite {

    @Override
    protected String engine() {
        return GlooBackend.NAME;
    }

    @Override
    protected double lostPeerSeconds() {
        return 6.0;
    }

    @Override
    protected String unreachableStoreSays(int port) {
        return "CONNECT FAILED rank 1 of 2: could not reach the TCP store at 127.0.0.1:" + port;
    }

    @Override
    protected List<String> takenPortSays(int port) {
        return List.of("cannot host the TCP store on 127.0.0.1:" + port, "MASTER_PORT taken");
    }
}
