package dev.cohort.launcher;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.cohort.launcher.testing.TestWorker;
import dev.cohort.runtime.ComputeThreads;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Validation messages and program resolution, without starting anything. */
@Timeout(10)
class OptionsAndProgramTest {

    /** Every pool's variable, each set to one thread. */
    private static final Map<String, String> ONE_THREAD_PER_POOL = Map.of(
            "OMP_NUM_THREADS", "1", "OPENBLAS_NUM_THREADS", "1", "MKL_NUM_THREADS", "1", "COHORT_COMPUTE_THREADS", "1");

    private static final String CP = System.getProperty("java.class.path");

    @Test
    void badOptionsAreNamedWithWhatToDo() {
        assertThatThrownBy(() -> LaunchOptions.builder().nprocPerNode(0).build())
                .hasMessageContaining("--nproc-per-node");
        assertThatThrownBy(() -> LaunchOptions.builder()
                        .nnodes(2)
                        .nodeRank(2)
                        .masterAddr("h")
                        .build())
                .hasMessageContaining("--node-rank must be in [0, --nnodes=2)");
        assertThatThrownBy(() -> LaunchOptions.builder().nnodes(2).nodeRank(1).build())
                .hasMessageContaining("needs --master-addr");
        assertThatThrownBy(() -> LaunchOptions.builder()
                        .nnodes(2)
                        .masterAddr("h")
                        .masterPort(0)
                        .build())
                .hasMessageContaining("--master-port 0");
        assertThatThrownBy(() -> LaunchOptions.builder().masterPort(65536).build())
                .hasMessageContaining("[1, 65535]");
        assertThatThrownBy(() -> LaunchOptions.builder().runId("a b").build()).hasMessageContaining("--run-id");
        assertThatThrownBy(() -> LaunchOptions.parseCount("--nnodes", "x", false))
                .hasMessageContaining("whole number");
        assertThatThrownBy(() -> LaunchOptions.parseCount("--nnodes", "-2", false))
                .hasMessageContaining("negative");
        assertThat(LaunchOptions.parseCount("--nproc-per-node", "auto", true))
                .isEqualTo(Runtime.getRuntime().availableProcessors());
    }

    /** What --trace-events refuses before anything starts: without --trace, or a category that is none. */
    @Test
    void traceEventsNeedATraceAndKnownCategories(@TempDir Path dir) {
        assertThat(refusal("--trace-events", "training", "--", "sh", "-c", "true"))
                .contains("--trace-events chooses what --trace DIR records; give --trace too");
        assertThat(refusal("--trace", dir.toString(), "--trace-events", "training,gpu", "--", "sh", "-c", "true"))
                .contains("no category of Cohort's events is called 'gpu'; choose from collectives, elastic, training");
    }

    /** What {@code cohort run args} says as it refuses them with the bad-input status. */
    private static String refusal(String... args) {
        java.io.StringWriter err = new java.io.StringWriter();
        picocli.CommandLine cli = LauncherMain.command();
        cli.setErr(new java.io.PrintWriter(err, true));
        assertThat(cli.execute(args)).isEqualTo(LauncherMain.BAD_INPUT);
        return err.toString();
    }

    @Test
    void multiNodeRanksAreBlocksPerNode() {
        LaunchOptions o = LaunchOptions.builder()
                .nnodes(3)
                .nodeRank(2)
                .nprocPerNode(4)
                .masterAddr("h")
                .masterPort(1234)
                .build();
        assertThat(o.worldSize()).isEqualTo(12);
        assertThat(o.globalRank(1)).isEqualTo(9);
        assertThat(o.controlPort()).isEqualTo(1235);
    }

    @Test
    void programTokensResolveToMainClassJarOrCommand() {
        assertThat(WorkerProgram.resolve(List.of(TestWorker.class.getName(), "env"), CP)
                        .command())
                .endsWith(TestWorker.class.getName(), "env")
                .contains("-cp")
                .containsAll(WorkerProgram.inheritedModuleOptions()); // e.g. shm's --add-modules
        assertThat(WorkerProgram.resolve(List.of("sh", "-c", "true"), CP).command())
                .containsExactly("sh", "-c", "true");
        assertThatThrownBy(() -> WorkerProgram.resolve(List.of(), CP)).hasMessageContaining("after '--'");
        assertThatThrownBy(() -> WorkerProgram.resolve(List.of("com.example.Missing"), CP))
                .hasMessageContaining("main class com.example.Missing does not exist");
        assertThatThrownBy(() -> WorkerProgram.resolve(List.of("missing.jar"), CP))
                .hasMessageContaining("does not exist");
        assertThatThrownBy(() -> WorkerProgram.resolve(List.of("no-such-command-xyz"), CP))
                .hasMessageContaining("not found on PATH");
        assertThatThrownBy(() -> WorkerProgram.resolve(List.of("./nope.sh"), CP))
                .hasMessageContaining("not an executable");
        assertThat(WorkerProgram.jar(Path.of("/a.jar"), List.of("x")).command())
                .containsSequence("-jar", "/a.jar", "x");
    }

    /** A main class compiled into {@code dir} (package com.example), which the launcher's own class path lacks. */
    private static void compileUserMain(Path dir) throws Exception {
        Path src = Files.createDirectories(dir.resolve("src/com/example")).resolve("Hello.java");
        Files.writeString(src, "package com.example; public class Hello { public static void main(String[] a) { } }");
        int rc = ToolProvider.getSystemJavaCompiler()
                .run(null, null, null, "-d", dir.resolve("classes").toString(), src.toString());
        assertThat(rc).isZero();
    }

    @Test
    void aUsersClassPathGoesAheadOfCohortsForAMainClass(@TempDir Path dir) throws Exception {
        compileUserMain(dir);
        String user = dir.resolve("classes").toString();
        assertThatThrownBy(() -> WorkerProgram.resolve(List.of("com.example.Hello"), null, CP))
                .hasMessageContaining("main class com.example.Hello does not exist");
        List<String> command = WorkerProgram.resolve(List.of("com.example.Hello", "x"), user, CP)
                .command();
        assertThat(command).containsSequence("-cp", user + File.pathSeparator + CP, "com.example.Hello", "x");
    }

    /** {@code cohort run -cp app.jar -- SimpleMNIST}: a main class in the default package, no dot in its name. */
    @Test
    void aMainClassInTheDefaultPackageIsAMainClassNotACommand(@TempDir Path dir) throws Exception {
        Path src = Files.createDirectories(dir.resolve("src"));
        for (String name : List.of("SimpleMNIST", "sh")) {
            Files.writeString(
                    src.resolve(name + ".java"),
                    "public class " + name + " { public static void main(String[] a) { } }");
            int rc = ToolProvider.getSystemJavaCompiler()
                    .run(
                            null,
                            null,
                            null,
                            "-d",
                            dir.resolve("classes").toString(),
                            src.resolve(name + ".java").toString());
            assertThat(rc).isZero();
        }
        Path jar = dir.resolve("app.jar");
        try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar))) {
            out.putNextEntry(new JarEntry("SimpleMNIST.class"));
            out.write(Files.readAllBytes(dir.resolve("classes/SimpleMNIST.class")));
        }
        WorkerProgram program = WorkerProgram.resolve(List.of("SimpleMNIST", "--epochs", "1"), jar.toString(), CP);
        assertThat(program.description()).isEqualTo("main class SimpleMNIST");
        assertThat(program.command())
                .containsSequence("-cp", jar + File.pathSeparator + CP, "SimpleMNIST", "--epochs", "1");
        // A class on the class path wins over a command of the same name on PATH; the command stays a command
        // elsewhere.
        assertThat(WorkerProgram.resolve(List.of("sh"), dir.resolve("classes").toString(), CP)
                        .description())
                .isEqualTo("main class sh");
        assertThat(WorkerProgram.resolve(List.of("sh", "-c", "true"), null, CP).description())
                .isEqualTo("command sh");
        assertThatThrownBy(() -> WorkerProgram.resolve(List.of("SimpleMNIST"), null, CP))
                .hasMessageContaining("'SimpleMNIST' is neither a class on the class path nor a command on PATH")
                .hasMessageContaining("-cp");
    }

    @Test
    void aFolderOfJarsIsReadAsJavaReadsIt(@TempDir Path dir) throws Exception {
        compileUserMain(dir);
        Path libs = Files.createDirectories(dir.resolve("libs"));
        try (JarOutputStream jar = new JarOutputStream(Files.newOutputStream(libs.resolve("app.jar")))) {
            jar.putNextEntry(new JarEntry("com/example/Hello.class"));
            jar.write(Files.readAllBytes(dir.resolve("classes/com/example/Hello.class")));
        }
        String user = libs + File.separator + "*";
        assertThat(WorkerProgram.resolve(List.of("com.example.Hello"), user, CP).description())
                .isEqualTo("main class com.example.Hello");
    }

    @Test
    void aUsersClassPathIsCheckedAndOnlyForAMainClass(@TempDir Path dir) {
        assertThatThrownBy(() -> WorkerProgram.resolve(
                        List.of(TestWorker.class.getName()),
                        dir.resolve("gone.jar").toString(),
                        CP))
                .hasMessageContaining("class path entry " + dir.resolve("gone.jar") + " does not exist");
        assertThatThrownBy(() -> WorkerProgram.resolve(List.of("sh", "-c", "true"), dir.toString(), CP))
                .hasMessageContaining("--classpath is for a main class, but the program is a command sh");
    }

    @Test
    void exitStatusNamesSignals() {
        assertThat(new ExitStatus(3).describe()).isEqualTo("exited with code 3");
        assertThat(new ExitStatus(137).describe()).isEqualTo("killed by SIGKILL (exit 137)");
        assertThat(new ExitStatus(143).signalName()).isEqualTo("SIGTERM");
        assertThat(new ExitStatus(255).signalName()).isNull();
    }

    @Test
    void computeThreadsKeepWhatTheUserSet() {
        assertThat(ComputeThreads.perWorker(2, 4)).isEqualTo(1);
        assertThat(ComputeThreads.perWorker(16, 3)).isEqualTo(5);
        assertThat(ComputeThreads.variables(Map.of("OMP_NUM_THREADS", "3")))
                .containsExactlyInAnyOrderEntriesOf(
                        Map.of("OPENBLAS_NUM_THREADS", "1", "MKL_NUM_THREADS", "3", "COHORT_COMPUTE_THREADS", "3"));
        assertThat(ComputeThreads.variables(Map.of("MKL_NUM_THREADS", "7")))
                .containsExactlyInAnyOrderEntriesOf(
                        Map.of("OMP_NUM_THREADS", "1", "OPENBLAS_NUM_THREADS", "1", "COHORT_COMPUTE_THREADS", "1"));
        assertThat(ComputeThreads.variables(ONE_THREAD_PER_POOL)).isEmpty();
    }

    /**
     * The pools multiply (OpenBLAS's inside each OpenMP thread), and a second OpenMP thread made a
     * small model many times slower on 2 CPUs (scripts/bench-threads.sh), so each defaults to 1.
     */
    @Test
    void computeThreadsDefaultToOneThreadPerPool() {
        // A Spark rank's pools follow its task's CPUs (spark.task.cpus), one OpenBLAS thread under each.
        assertThat(ComputeThreads.variables(Map.of(), 2))
                .containsExactlyInAnyOrderEntriesOf(Map.of(
                        "OMP_NUM_THREADS", "2",
                        "OPENBLAS_NUM_THREADS", "1",
                        "MKL_NUM_THREADS", "2",
                        "COHORT_COMPUTE_THREADS", "2"));
        assertThat(ComputeThreads.variables(Map.of())).containsExactlyInAnyOrderEntriesOf(ONE_THREAD_PER_POOL);
        assertThat(ComputeThreads.describe(ComputeThreads.variables(Map.of()), 16, 2))
                .isEqualTo("compute threads per worker: OMP_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1, MKL_NUM_THREADS=1, "
                        + "COHORT_COMPUTE_THREADS=1 (16 cores / 2 workers on this node: OMP_NUM_THREADS × "
                        + "OPENBLAS_NUM_THREADS up to 8 per worker cannot oversubscribe); set them to override");
    }
}
