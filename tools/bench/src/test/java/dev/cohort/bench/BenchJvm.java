package dev.cohort.bench;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** {@code cohort bench ARGS} in a JVM of its own (as each host starts it), output into a log file. */
final class BenchJvm {

    private BenchJvm() {}

    static Process start(Path log, List<String> args) throws IOException {
        return start(log, args, Map.of());
    }

    /** The same with {@code env} added to this JVM's environment. */
    static Process start(Path log, List<String> args, Map<String, String> env) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp",
                System.getProperty("java.class.path"),
                BenchMain.class.getName()));
        cmd.addAll(args);
        ProcessBuilder builder =
                new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
        builder.environment().putAll(env);
        return builder.start();
    }

    /** Runs it to the end (at most 200 s) and returns its exit code. */
    static int run(Path log, List<String> args) throws IOException, InterruptedException {
        return run(log, args, Map.of());
    }

    /** The same with {@code env} added to this JVM's environment. */
    static int run(Path log, List<String> args, Map<String, String> env) throws IOException, InterruptedException {
        Process p = start(log, args, env);
        try {
            assertThat(p.waitFor(200, TimeUnit.SECONDS))
                    .as("the benchmark finished")
                    .isTrue();
            return p.exitValue();
        } finally {
            p.destroyForcibly();
        }
    }

    /** What a run that succeeded wrote: its {@code --json} file and its output. */
    record Output(JsonNode json, String log) {}

    /**
     * Runs {@code cohort bench} with the words of {@code line} (see {@link #words}) and
     * {@code --json DIR/NAME.json}, its output into {@code DIR/NAME.log}; asserts that it succeeded
     * (showing the output where not) and returns what it wrote.
     */
    static Output succeeds(Path dir, String name, String line, String... more) throws Exception {
        Path json = dir.resolve(name + ".json");
        Path log = dir.resolve(name + ".log");
        List<String> args = new ArrayList<>(List.of(words(line, more)));
        args.addAll(List.of("--json", json.toString()));
        assertThat(run(log, args)).as(Files.readString(log)).isZero();
        return new Output(new ObjectMapper().readTree(Files.readString(json)), Files.readString(log));
    }

    /** The words of {@code line} (split at spaces), then {@code more}: a command line written compactly. */
    static String[] words(String line, String... more) {
        return java.util.stream.Stream.concat(java.util.Arrays.stream(line.split(" ")), java.util.Arrays.stream(more))
                .toArray(String[]::new);
    }
}
