package dev.cohort.tcp;

import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.JoinException;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.testkit.WorkerProcess;
import java.time.Duration;

/**
 * A worker for the tcp failure tests. Rank 0 runs a few allreduces; rank 1 misbehaves as
 * {@code args[0]} says: {@code absent} (stops calling collectives and sleeps), {@code die} (the
 * process exits abruptly), {@code stop} (SIGSTOP: alive but silent). Rank 0 prints
 * {@code FAILED <class>: <message>} and exits 3 when its collective fails as it should; a rank
 * that cannot join prints {@code CONNECT FAILED <message>} and exits 4.
 */
public final class TcpFaultWorker {

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        TcpOptions options = new TcpOptions()
                .timeout(Duration.ofSeconds(mode.equals("stop") ? 6 : 3))
                .connectTimeout(Duration.ofSeconds(5))
                .stallTime(Duration.ofSeconds(2));
        try (TcpBackend backend = new TcpBackend(options, System.getenv())) {
            backend.initialize();
            float[] data = new float[1024];
            for (int i = 0; i < 3; i++) {
                backend.group().allreduce(DenseBuffer.of(data), ReduceOp.SUM).await();
            }
            if (backend.rank() == 1) {
                if (mode.equals("die")) {
                    Runtime.getRuntime().halt(9);
                }
                if (mode.equals("stop")) {
                    new ProcessBuilder(
                                    "kill",
                                    "-STOP",
                                    Long.toString(ProcessHandle.current().pid()))
                            .start();
                }
                Thread.sleep(10_000);
                Runtime.getRuntime().halt(0);
            }
            WorkerProcess.expectFailure(() -> backend.group()
                    .allreduce(DenseBuffer.of(data), ReduceOp.SUM)
                    .await());
        } catch (JoinException e) {
            System.out.println("CONNECT FAILED " + e.getMessage());
            System.out.flush();
            Runtime.getRuntime().halt(4);
        }
    }
}
