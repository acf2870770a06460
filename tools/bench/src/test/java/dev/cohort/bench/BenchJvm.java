package dev.cohort.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** {@code cohort bench ARGS} in a JVM of its own (as each host starts it), output into a log file. */
final class BenchJvm {

    private BenchJvm() {
    }

    static Process start(Path log, List<String> args) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"), BenchMain.class.getName()));
        cmd.addAll(args);
        return new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    }

    /** Runs it to the end (at most 200 s) and returns its exit code. */
    static int run(Path log, List<String> args) throws IOException, InterruptedException {
        Process p = start(log, args);
        try {
            assertThat(p.waitFor(200, TimeUnit.SECONDS)).as("the benchmark finished").isTrue();
            return p.exitValue();
        } finally {
            p.destroyForcibly();
        }
    }
}
