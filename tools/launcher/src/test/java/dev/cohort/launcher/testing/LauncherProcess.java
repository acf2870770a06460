package dev.cohort.launcher.testing;

import dev.cohort.launcher.LauncherMain;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** {@code ./cohort run}'s code path for tests: {@link LauncherMain} in a child JVM, its output in a file. */
public final class LauncherProcess {

    private final Process process;
    private final Path log;

    private LauncherProcess(Process process, Path log) {
        this.process = process;
        this.log = log;
    }

    /** LauncherMain with {@code args}, run by this JDK with {@code jvmOptions}; output (both streams) to {@code log}. */
    public static LauncherProcess start(List<String> jvmOptions, List<String> args, Path log) throws IOException {
        return start(
                List.of(),
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                jvmOptions,
                args,
                log);
    }

    /**
     * LauncherMain with {@code args}, run by {@code java} behind {@code prefix} (e.g. {@code ip netns
     * exec NS}); output (both streams) to {@code log}.
     */
    public static LauncherProcess start(
            List<String> prefix, String java, List<String> jvmOptions, List<String> args, Path log) throws IOException {
        List<String> cmd = new ArrayList<>(prefix);
        cmd.add(java);
        cmd.addAll(jvmOptions);
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), LauncherMain.class.getName()));
        cmd.addAll(args);
        Process p = new ProcessBuilder(cmd)
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
        return new LauncherProcess(p, log);
    }

    /** {@code -- TestWorker MODE DIR ARGS...}: the program part of a launcher's arguments. */
    public static List<String> testWorker(String mode, Path dir, String... args) {
        List<String> program = new ArrayList<>(List.of("--", TestWorker.class.getName(), mode, dir.toString()));
        program.addAll(List.of(args));
        return program;
    }

    public Process process() {
        return process;
    }

    /** What it printed so far. */
    public String output() throws IOException {
        return Files.readString(log);
    }

    /** Its exit code, waiting up to {@code seconds}; else kills it and fails, showing its output. */
    public int awaitExit(int seconds) throws IOException, InterruptedException {
        if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new AssertionError("the launcher did not exit within " + seconds + " s; output:\n" + output());
        }
        return process.exitValue();
    }
}
