package dev.cohort.launcher;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.cohort.launcher.testing.TestWorker;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Validation messages and program resolution, without starting anything. */
@Timeout(10)
class OptionsAndProgramTest {

    private static final String CP = System.getProperty("java.class.path");

    @Test
    void badOptionsAreNamedWithWhatToDo() {
        assertThatThrownBy(() -> LaunchOptions.builder().nprocPerNode(0).build()).hasMessageContaining("--nproc-per-node");
        assertThatThrownBy(() -> LaunchOptions.builder().nnodes(2).nodeRank(2).masterAddr("h").build())
                .hasMessageContaining("--node-rank must be in [0, --nnodes=2)");
        assertThatThrownBy(() -> LaunchOptions.builder().nnodes(2).nodeRank(1).build())
                .hasMessageContaining("needs --master-addr");
        assertThatThrownBy(() -> LaunchOptions.builder().nnodes(2).masterAddr("h").masterPort(0).build())
                .hasMessageContaining("--master-port 0");
        assertThatThrownBy(() -> LaunchOptions.builder().masterPort(65536).build()).hasMessageContaining("[1, 65535]");
        assertThatThrownBy(() -> LaunchOptions.builder().runId("a b").build()).hasMessageContaining("--run-id");
        assertThatThrownBy(() -> LaunchOptions.parseCount("--nnodes", "x", false)).hasMessageContaining("whole number");
        assertThatThrownBy(() -> LaunchOptions.parseCount("--nnodes", "-2", false)).hasMessageContaining("negative");
        assertThat(LaunchOptions.parseCount("--nproc-per-node", "auto", true))
                .isEqualTo(Runtime.getRuntime().availableProcessors());
    }

    @Test
    void multiNodeRanksAreBlocksPerNode() {
        LaunchOptions o = LaunchOptions.builder().nnodes(3).nodeRank(2).nprocPerNode(4).masterAddr("h")
                .masterPort(1234).build();
        assertThat(o.worldSize()).isEqualTo(12);
        assertThat(o.globalRank(1)).isEqualTo(9);
        assertThat(o.controlPort()).isEqualTo(1235);
    }

    @Test
    void programTokensResolveToMainClassJarOrCommand() {
        assertThat(WorkerProgram.resolve(List.of(TestWorker.class.getName(), "env"), CP).command())
                .endsWith(TestWorker.class.getName(), "env").contains("-cp")
                .containsAll(WorkerProgram.inheritedModuleOptions());     // e.g. shm's --add-modules
        assertThat(WorkerProgram.resolve(List.of("sh", "-c", "true"), CP).command()).containsExactly("sh", "-c", "true");
        assertThatThrownBy(() -> WorkerProgram.resolve(List.of(), CP)).hasMessageContaining("after '--'");
        assertThatThrownBy(() -> WorkerProgram.resolve(List.of("com.example.Missing"), CP))
                .hasMessageContaining("main class com.example.Missing does not exist");
        assertThatThrownBy(() -> WorkerProgram.resolve(List.of("missing.jar"), CP)).hasMessageContaining("does not exist");
        assertThatThrownBy(() -> WorkerProgram.resolve(List.of("no-such-command-xyz"), CP))
                .hasMessageContaining("not found on PATH");
        assertThatThrownBy(() -> WorkerProgram.resolve(List.of("./nope.sh"), CP)).hasMessageContaining("not an executable");
        assertThat(WorkerProgram.jar(Path.of("/a.jar"), List.of("x")).command()).containsSequence("-jar", "/a.jar", "x");
    }

    @Test
    void exitStatusNamesSignals() {
        assertThat(new ExitStatus(3).describe()).isEqualTo("exited with code 3");
        assertThat(new ExitStatus(137).describe()).isEqualTo("killed by SIGKILL (exit 137)");
        assertThat(new ExitStatus(143).signalName()).isEqualTo("SIGTERM");
        assertThat(new ExitStatus(255).signalName()).isNull();
    }

    @Test
    void computeThreadsSplitTheCoresAndKeepWhatTheUserSet() {
        assertThat(ComputeThreads.perWorker(2, 4)).isEqualTo(1);
        assertThat(ComputeThreads.perWorker(16, 3)).isEqualTo(5);
        assertThat(ComputeThreads.variables(Map.of("OMP_NUM_THREADS", "3"), 8, 2))
                .containsOnlyKeys("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "COHORT_COMPUTE_THREADS")
                .containsValue("4");
    }
}
