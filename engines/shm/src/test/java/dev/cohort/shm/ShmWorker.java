package dev.cohort.shm;

import dev.cohort.api.Backends;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.testkit.WorkerProcess;
import java.time.Duration;

/**
 * A worker process of the shm tests, on the backend found through {@code Backends.select("shm")}
 * (as {@code ./cohort} would find it). Modes: {@code conformance} (the whole suite),
 * {@code conformance-small} (without the 4 Mi cases), {@code die} (rank 1 halts after three
 * allreduces, rank 0 reports how its next one fails), {@code absent} (rank 1 stops calling
 * collectives), {@code stop} (rank 1 prints {@code STOPPING pid P} and stops itself with
 * SIGSTOP; once continued, it runs the allreduce rank 0 gave up on). Prints {@code TOPOLOGY},
 * {@code OK rank R} and {@code FAILED after X s} lines.
 */
public final class ShmWorker {

    public static void main(String[] args) {
        String mode = args.length > 0 ? args[0] : "conformance";
        WorkerProcess.main(() -> {
            try (DistributedBackend backend = Backends.select("shm")) {
                boolean fault = mode.equals("die") || mode.equals("absent") || mode.equals("stop");
                if (backend instanceof ShmBackend shm) {
                    shm.options()
                            .timeout(Duration.ofSeconds(mode.equals("stop") ? 6 : fault ? 3 : 60))
                            .stallTime(Duration.ofSeconds(mode.equals("stop") ? 2 : 30))
                            .connectTimeout(Duration.ofSeconds(30));
                }
                backend.initialize();
                System.out.println("TOPOLOGY " + backend.topology());
                if (fault) {
                    fault(backend, mode);
                    return;
                }
                int checks = WorkerProcess.conformance(mode, backend)
                        .orElseThrow(() -> new IllegalArgumentException("unknown mode " + mode));
                WorkerProcess.finish(backend, checks);
            }
        });
    }

    private static void fault(DistributedBackend backend, String mode) throws Exception {
        float[] data = new float[1024];
        for (int i = 0; i < 3; i++) {
            backend.group().allreduce(DenseBuffer.of(data), ReduceOp.SUM).await();
        }
        if (backend.rank() == 1) {
            if (mode.equals("die")) {
                Runtime.getRuntime().halt(9); // no shutdown hooks, no close: as abrupt as SIGKILL for the peers
            }
            if (mode.equals("stop")) {
                System.out.println("STOPPING pid " + ProcessHandle.current().pid());
                System.out.flush();
                WorkerProcess.signalSelf("STOP");
                // The stop takes effect once a thread of this JVM handles the signal, which on a busy
                // host can be after kill exited and this thread ran on: wait here, not in a collective.
                Thread.sleep(1000);
                System.out.println("RESUMED");
                System.out.flush();
            } else {
                System.out.println("ABSENT pid " + ProcessHandle.current().pid());
                System.out.flush();
                Thread.sleep(10_000);
                Runtime.getRuntime().halt(0);
            }
        }
        WorkerProcess.expectFailure(() ->
                backend.group().allreduce(DenseBuffer.of(data), ReduceOp.SUM).await());
    }
}
