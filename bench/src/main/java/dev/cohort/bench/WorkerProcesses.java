package dev.cohort.bench;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Starts one benchmark worker JVM per rank on loopback with the launch environment, and waits
 * for them within a deadline; when one fails or the deadline passes the others are killed. Worker
 * output goes to this process's console.
 */
final class WorkerProcesses {

    private WorkerProcesses() {
    }

    static int run(int world, Class<?> main, List<String> args, Duration limit) throws IOException, InterruptedException {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        List<Process> workers = new ArrayList<>();
        try {
            for (int r = 0; r < world; r++) {
                List<String> cmd = new ArrayList<>(List.of(Paths.get(System.getProperty("java.home"), "bin", "java").toString(),
                        "-cp", System.getProperty("java.class.path"), main.getName()));
                cmd.addAll(args);
                ProcessBuilder pb = new ProcessBuilder(cmd).inheritIO();
                pb.environment().putAll(java.util.Map.of("MASTER_ADDR", "127.0.0.1", "MASTER_PORT", Integer.toString(port),
                        "RANK", Integer.toString(r), "WORLD_SIZE", Integer.toString(world),
                        "LOCAL_RANK", Integer.toString(r), "LOCAL_WORLD_SIZE", Integer.toString(world), "GROUP_RANK", "0",
                        "OMP_NUM_THREADS", "1", "OPENBLAS_NUM_THREADS", "1"));
                workers.add(pb.start());
            }
            long deadline = System.nanoTime() + limit.toNanos();
            int failed = 0;
            for (int r = 0; r < world; r++) {
                Process p = workers.get(r);
                long left = deadline - System.nanoTime();
                if (!p.waitFor(Math.max(0, left), TimeUnit.NANOSECONDS)) {
                    System.err.println("cohort bench: rank " + r + " did not finish within " + limit + "; stopping the workers");
                    return 124;
                }
                if (p.exitValue() != 0 && failed == 0) {
                    failed = p.exitValue();
                    System.err.println("cohort bench: rank " + r + " exited with " + failed);
                    deadline = Math.min(deadline, System.nanoTime() + TimeUnit.SECONDS.toNanos(10));
                }
            }
            return failed;
        } finally {
            for (Process p : workers) {
                p.destroyForcibly();
            }
        }
    }
}
