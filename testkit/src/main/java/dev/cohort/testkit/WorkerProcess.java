package dev.cohort.testkit;

import dev.cohort.api.DistributedBackend;
import dev.cohort.api.collective.CollectiveException;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ProcessGroup;
import java.util.Arrays;
import java.util.OptionalInt;

/**
 * What every engine's test worker process does alike: run a body and report a failure as a stack
 * trace and exit code 1 (never a hang in shutdown), run the conformance suite by mode, and finish
 * with the checks every backend must pass (the node group holds exactly this node's ranks,
 * {@code averageAll}, a barrier). Prints the {@code NODE k RANKS [...]} and {@code OK rank R}
 * lines that {@link JvmWorkers#assertAllOk} and the tests read.
 */
public final class WorkerProcess {

    /** A worker's body. */
    @FunctionalInterface
    public interface Body {
        void run() throws Exception;
    }

    /** The exit code of a worker whose collective failed as {@link #expectFailure} expected. */
    public static final int FAILED_AS_EXPECTED = 3;

    private WorkerProcess() {}

    /** Runs {@code body}; exits 0 after it, or prints what it threw and halts with 1. */
    public static void main(Body body) {
        try {
            body.run();
        } catch (Throwable t) {
            t.printStackTrace(System.out);
            System.out.flush();
            Runtime.getRuntime().halt(1);
        }
        System.exit(0);
    }

    /** A collective a fault test expects to fail. */
    @FunctionalInterface
    public interface Call {
        void run();
    }

    /**
     * Runs {@code call}, which must fail: prints {@code FAILED after X s TYPE: message} and halts
     * with {@link #FAILED_AS_EXPECTED}, or prints {@code UNEXPECTED SUCCESS} and halts with 0, which
     * the test rejects.
     */
    public static void expectFailure(Call call) {
        long start = System.nanoTime();
        try {
            call.run();
            System.out.println("UNEXPECTED SUCCESS");
            System.out.flush();
            Runtime.getRuntime().halt(0);
        } catch (CollectiveException e) {
            System.out.printf(
                    "FAILED after %.1f s %s: %s%n",
                    (System.nanoTime() - start) / 1e9, e.getClass().getSimpleName(), e.getMessage());
            System.out.flush();
            Runtime.getRuntime().halt(FAILED_AS_EXPECTED);
        }
    }

    /** Sends this process {@code signal} ("STOP", "9") with kill(1), as a peer's fault would come. */
    public static void signalSelf(String signal) throws java.io.IOException, InterruptedException {
        new ProcessBuilder(
                        "kill",
                        "-" + signal,
                        Long.toString(ProcessHandle.current().pid()))
                .start()
                .waitFor();
    }

    /**
     * Runs the conformance suite for {@code mode} {@code conformance} (whole) or
     * {@code conformance-small} (without the 4 Mi cases), or the subgroup and message suites
     * ({@code subgroups}), on the backend's group; empty for other modes.
     */
    public static OptionalInt conformance(String mode, DistributedBackend backend) {
        return switch (mode) {
            case "conformance" -> OptionalInt.of(ConformanceSuite.run(backend.group(), true));
            case "conformance-small" -> OptionalInt.of(ConformanceSuite.run(backend.group(), false));
            case "subgroups" -> OptionalInt.of(subgroups(backend.group()));
            default -> OptionalInt.empty();
        };
    }

    private static int subgroups(ProcessGroup world) {
        try {
            return SubgroupSuite.run(world) + MessageSuite.run(world);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * The checks every backend must pass after a mode's work: the node group gathers exactly this
     * node's ranks, {@code averageAll(rank)} is the mean rank, and a barrier; then prints
     * {@code OK rank R checks C}.
     */
    public static void finish(DistributedBackend backend, int checks) {
        int rank = backend.rank();
        long[] nodeRanks = new long[backend.localWorldSize()];
        backend.localBarrier();
        backend.group().barrier().await();
        backend.nodeGroup()
                .allgather(DenseBuffer.of(new long[] {rank}), DenseBuffer.of(nodeRanks))
                .await();
        System.out.println("NODE " + backend.nodeRank() + " RANKS " + Arrays.toString(nodeRanks));
        double mean = backend.averageAll(rank);
        if (mean != (backend.worldSize() - 1) / 2.0) {
            throw new AssertionError("averageAll(rank) = " + mean + ", expected " + (backend.worldSize() - 1) / 2.0);
        }
        backend.barrier();
        System.out.println("OK rank " + rank + " checks " + checks);
    }
}
