package dev.cohort.tcp;

import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.testkit.WorkerProcess;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Joins a tcp job, averages a buffer, then prints every shared library mapped into this process
 * that is not the JDK's own ({@code NATIVE <path>}), and {@code OK} when the average was right.
 */
public final class NativeFreeWorker {

    public static void main(String[] args) {
        WorkerProcess.main(() -> {
            try (TcpBackend backend = new TcpBackend(new TcpOptions(), System.getenv())) {
                backend.initialize();
                float[] data = {backend.rank() + 1f};
                backend.group().allreduce(DenseBuffer.of(data), ReduceOp.AVG).await();
                String jdk =
                        Path.of(System.getProperty("java.home")).toRealPath().toString();
                Files.readAllLines(Path.of("/proc/self/maps")).stream()
                        .map(line -> line.substring(line.lastIndexOf(' ') + 1))
                        .filter(p -> p.contains(".so")
                                && !p.startsWith(jdk)
                                && !p.startsWith("/usr/lib/x86_64-linux-gnu/")
                                && !p.startsWith("/lib")
                                && !p.startsWith("/usr/lib64"))
                        .distinct()
                        .forEach(p -> System.out.println("NATIVE " + p));
                System.out.println(data[0] == (backend.worldSize() + 1) / 2f ? "OK" : "WRONG " + data[0]);
            }
        });
    }
}
