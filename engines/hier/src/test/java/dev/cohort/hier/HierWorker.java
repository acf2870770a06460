package dev.cohort.hier;

import dev.cohort.api.DistributedBackend;
import dev.cohort.api.collective.CollectiveException;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.testkit.EngineWorker;

/**
 * A worker process of the hier tests. Its first argument is the mode, the rest a command line as a
 * training program would get it ({@code --distributed-backend hier --hier-timeout 60 ...}),
 * parsed by {@link EngineWorker}, so the backend is found and configured as
 * {@code ./cohort run} would. Modes: {@code conformance} (the whole suite),
 * {@code conformance-small} (without the 4 Mi cases), {@code victim:R} (allreduces of 4 MiB until
 * one fails; rank R prints {@code VICTIM pid P} after three and goes on, for the test to SIGKILL it),
 * {@code absent:R} (the same, but rank R stops calling collectives after three, for 10 s, then exits),
 * {@code absent-then-close:R} (as {@code absent:R}, but a rank whose call failed closes the backend
 * before it exits, as a try-with-resources block would),
 * {@code late-broadcasts:R} (4 KiB broadcasts from rank 0 until one fails: rank R stops as in
 * {@code absent:R}, for the test to SIGKILL it, and host 0's ranks start the fourth broadcast 3 s
 * late, so the leader of R's host waits between hosts while R dies and meets the loss only when it
 * relays its verdict), {@code engine-threads} (one allreduce, then an {@code ENGINE THREADS [...]} line
 * naming the live threads of the engines' call queues), {@code reduce-beside-allreduce} (host 0's
 * ranks reduce to rank 0, the other hosts' allreduce) and {@code gathers-to-two-roots} (host 0's
 * ranks gather to rank 0, the others to rank 1): each prints {@code MISMATCH <exception>: <message>}
 * when the call fails, else {@code UNDETECTED}.
 * Prints {@code TOPOLOGY}, {@code NODE k RANKS [...]}, {@code OK rank R} and
 * {@code FAILED after X s} lines.
 */
public final class HierWorker {

    public static void main(String[] args) {
        EngineWorker.run(args, (mode, backend) -> {
            if (mode.startsWith("victim:")
                    || mode.startsWith("absent:")
                    || mode.startsWith("absent-then-close:")
                    || mode.startsWith("late-broadcasts:")) {
                untilOneFails(
                        backend,
                        mode.substring(0, mode.indexOf(':')),
                        Integer.parseInt(mode.substring(mode.indexOf(':') + 1)));
                return true;
            }
            if (mode.equals("reduce-beside-allreduce") || mode.equals("gathers-to-two-roots")) {
                mismatched(backend, mode);
                return true;
            }
            if (mode.equals("engine-threads")) {
                backend.group()
                        .allreduce(DenseBuffer.of(new float[] {1}), ReduceOp.SUM)
                        .await();
                System.out.println("ENGINE THREADS "
                        + Thread.getAllStackTraces().keySet().stream()
                                .map(Thread::getName)
                                .filter(n -> n.matches("cohort-(hier|shm|gloo|tcp|mpi)-.*rank-\\d+"))
                                .sorted()
                                .toList());
                System.out.println("OK rank " + backend.rank());
                return true;
            }
            return false;
        });
    }

    /** One call that host 0 issues differently from the other hosts (see the modes); reports whether it failed. */
    private static void mismatched(DistributedBackend backend, String mode) {
        boolean hostZero = backend.nodeRank() == 0;
        DenseBuffer data = DenseBuffer.of(new float[] {backend.rank()});
        try {
            if (mode.equals("reduce-beside-allreduce")) {
                (hostZero
                                ? backend.group().reduce(data, ReduceOp.SUM, 0)
                                : backend.group().allreduce(data, ReduceOp.SUM))
                        .await();
            } else {
                DenseBuffer all = DenseBuffer.of(new float[backend.worldSize()]);
                backend.group().gather(data, all, hostZero ? 0 : 1).await();
            }
            System.out.println("UNDETECTED");
        } catch (CollectiveException e) {
            System.out.println("MISMATCH " + e.getClass().getSimpleName() + ": " + e.getMessage());
        }
    }

    /** Allreduces until one fails; reports how long the failing one took and its message. */
    private static void untilOneFails(DistributedBackend backend, String kind, int victim) throws InterruptedException {
        boolean broadcasts = kind.equals("late-broadcasts");
        float[] data = new float[broadcasts ? 1 << 10 : 1 << 20];
        for (int i = 0; ; i++) {
            if (i == 3 && backend.rank() == victim) {
                System.out.println("VICTIM pid " + ProcessHandle.current().pid());
                System.out.flush();
                if (!kind.equals("victim")) {
                    Thread.sleep(10_000);
                    Runtime.getRuntime().halt(0);
                }
            }
            if (i == 3 && broadcasts && backend.nodeRank() == 0) {
                Thread.sleep(3_000);
            }
            long start = System.nanoTime();
            try {
                if (broadcasts) {
                    backend.group().broadcast(DenseBuffer.of(data), 0).await();
                } else {
                    backend.group()
                            .allreduce(DenseBuffer.of(data), ReduceOp.SUM)
                            .await();
                }
            } catch (CollectiveException e) {
                System.out.printf(
                        "FAILED after %.1f s in %s %d %s: %s%n",
                        (System.nanoTime() - start) / 1e9,
                        broadcasts ? "broadcast" : "allreduce",
                        i,
                        e.getClass().getSimpleName(),
                        e.getMessage());
                System.out.flush();
                if (kind.equals("absent-then-close")) {
                    backend.close();
                }
                Runtime.getRuntime().halt(3);
            }
        }
    }
}
