package dev.cohort.mpi;

import dev.cohort.api.DistributedBackend;
import dev.cohort.api.collective.CollectiveException;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.testkit.EngineWorker;
import dev.cohort.testkit.WorkerProcess;

/**
 * A rank of the mpi tests, started by mpirun: {@link EngineWorker}'s modes (the conformance suite)
 * and the faults. {@code mismatch}: rank 1 allreduces 1025 elements where the others allreduce
 * 1024; {@code absent}: rank 1 stops calling collectives; {@code killed}: rank 1 is SIGKILLed after
 * three allreduces; {@code abandon}: as {@code absent}, but rank 0 catches the failure and closes the
 * backend, which must end the job (rank 1 would wait for a minute); {@code stop}: both ranks run
 * 1 MiB allreduces until rank 1 stops itself (SIGSTOP) 300 ms in, most likely inside one. The
 * others report how their next allreduce fails ({@code FAILED after X s}).
 */
public final class MpiWorker {

    public static void main(String[] args) {
        EngineWorker.run(args, MpiWorker::fault);
    }

    private static boolean fault(String mode, DistributedBackend backend) throws Exception {
        if (!java.util.Set.of("mismatch", "absent", "killed", "abandon", "stop").contains(mode)) {
            return false;
        }
        if (mode.equals("stop")) {
            float[] large = new float[256 * 1024];
            if (backend.rank() == 1) {
                Thread stopper = new Thread(() -> {
                    try {
                        Thread.sleep(300);
                        System.out.println("STOPPING");
                        System.out.flush();
                        WorkerProcess.signalSelf("STOP");
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                });
                stopper.start();
            }
            WorkerProcess.expectFailure(() -> {
                while (true) {
                    backend.group()
                            .allreduce(DenseBuffer.of(large), ReduceOp.SUM)
                            .await();
                }
            });
        }
        float[] data = new float[1024];
        for (int i = 0; i < 3; i++) {
            backend.group().allreduce(DenseBuffer.of(data), ReduceOp.SUM).await();
        }
        if (backend.rank() == 1) {
            switch (mode) {
                case "mismatch" ->
                    WorkerProcess.expectFailure(() -> backend.group()
                            .allreduce(DenseBuffer.of(new float[1025]), ReduceOp.SUM)
                            .await());
                case "absent", "abandon" -> {
                    System.out.println("ABSENT");
                    System.out.flush();
                    Thread.sleep(60_000);
                }
                default -> WorkerProcess.signalSelf("9");
            }
            Thread.sleep(60_000);
        }
        if (mode.equals("abandon")) {
            try {
                backend.group().allreduce(DenseBuffer.of(data), ReduceOp.SUM).await();
            } catch (CollectiveException e) {
                System.out.println("CAUGHT " + e.getMessage());
                System.out.flush();
            }
            return true; // EngineWorker closes the backend
        }
        WorkerProcess.expectFailure(() ->
                backend.group().allreduce(DenseBuffer.of(data), ReduceOp.SUM).await());
        return true;
    }
}
