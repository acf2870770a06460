package dev.cohort.tcp;

import dev.cohort.testkit.EngineFailureSuite;
import java.util.List;

/** Timeouts, lost peers and wrong launches on tcp fail in time, with errors naming rank, operation and peer. */
class TcpFailureTest extends EngineFailureSuite {

    TcpFailureTest() {
        super(
                TcpBackend.NAME,
                2.0,
                port -> List.of("CONNECT FAILED tcp rank 1 of 2: could not join the job: the job's store at 127.0.0.1:"
                        + port + " did not answer in time"),
                port -> List.of("cannot serve the job's store on 127.0.0.1:" + port, "Choose another MASTER_PORT"));
    }
}
