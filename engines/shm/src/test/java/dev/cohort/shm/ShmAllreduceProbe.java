package dev.cohort.shm;

import dev.cohort.api.Backends;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.collective.ReduceOp;
import java.util.Arrays;

/**
 * A quick measurement, not a benchmark suite: float32 SUM allreduce at 4 KiB and 16 MiB on heap
 * arrays, timed per call after warm-up; prints the median over calls of the slowest rank's time
 * and the bus bandwidth (2 (n-1)/n bytes per element, as nccl-tests count). Start one process per
 * rank with the launch environment and {@code --add-modules jdk.incubator.vector}.
 */
public final class ShmAllreduceProbe {

    public static void main(String[] args) {
        try (DistributedBackend backend = Backends.select("shm")) {
            backend.initialize();
            ProcessGroup group = backend.group();
            int n = group.size();
            for (int bytes : new int[] {4 << 10, 16 << 20}) {
                int len = bytes / 4;
                float[] data = new float[len];
                Arrays.fill(data, 1f / (group.rank() + 1));
                boolean small = bytes < (1 << 20);
                int warm = small ? 20_000 : 30;
                int iters = small ? 2_000 : 40;
                for (int i = 0; i < warm; i++) {
                    group.allreduce(DenseBuffer.of(data), ReduceOp.SUM).await();
                }
                double[] t = new double[iters];
                for (int i = 0; i < iters; i++) {
                    group.barrier().await();
                    long t0 = System.nanoTime();
                    group.allreduce(DenseBuffer.of(data), ReduceOp.SUM).await();
                    t[i] = System.nanoTime() - t0;
                }
                group.allreduce(DenseBuffer.of(t), ReduceOp.MAX).await();
                Arrays.sort(t);
                double median = t[iters / 2];
                if (group.rank() == 0) {
                    System.out.printf(
                            "allreduce float32 SUM %8d B  n=%d  median %.2f us  min %.2f us  busbw %.2f GB/s%n",
                            bytes, n, median / 1e3, t[0] / 1e3, bytes * 2.0 * (n - 1) / n / median);
                }
            }
        }
    }
}
