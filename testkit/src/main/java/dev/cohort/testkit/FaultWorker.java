package dev.cohort.testkit;

import dev.cohort.api.DistributedBackend;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.JoinException;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.cli.BackendChoice;
import dev.cohort.cli.BackendOptions;
import java.util.List;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The worker of every engine's failure tests ({@link EngineFailureSuite}): {@code FaultWorker MODE
 * ENGINE}, the engine with a collective timeout of 3 s (6 s in mode {@code stop}), a connect
 * timeout of 5 s and stalls reported after 2 s. Rank 0 runs a few allreduces; rank 1 misbehaves
 * as {@code MODE} says: {@code absent} (stops calling collectives and sleeps), {@code die} (the
 * process exits abruptly with 9), {@code stop} (SIGSTOP: alive but silent). Rank 0 prints
 * {@code FAILED <class>: <message>} and exits 3 when its collective fails as it should; a rank
 * that cannot join prints {@code CONNECT FAILED <message>} and exits 4.
 */
public final class FaultWorker {

    @Command(name = "fault-worker")
    static final class Cli {}

    private FaultWorker() {}

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        String engine = args[1];
        CommandLine cli = new CommandLine(new Cli());
        BackendChoice choice = BackendOptions.add(cli);
        cli.parseArgs(
                "--distributed-backend",
                engine,
                "--" + engine + "-timeout",
                mode.equals("stop") ? "6" : "3",
                "--" + engine + "-connect-timeout",
                "5",
                "--" + engine + "-stall-seconds",
                "2");
        try (DistributedBackend backend = choice.backend()) {
            backend.initialize();
            float[] data = new float[1024];
            for (int i = 0; i < 3; i++) {
                backend.group().allreduce(DenseBuffer.of(data), ReduceOp.SUM).await();
            }
            if (backend.rank() == 1) {
                misbehave(mode);
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

    private static void misbehave(String mode) throws Exception {
        if (mode.equals("die")) {
            Runtime.getRuntime().halt(9);
        }
        if (mode.equals("stop")) {
            Thread.sleep(1500); // acts slow: lets a stall watch publish this rank's progress first
            new ProcessBuilder(List.of(
                            "kill",
                            "-STOP",
                            Long.toString(ProcessHandle.current().pid())))
                    .start();
        }
        Thread.sleep(10_000); // acts absent; the test is over before this ends
        Runtime.getRuntime().halt(0);
    }
}
