package dev.cohort.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.example.TrainFashionMnist;
import dev.cohort.launcher.LauncherMain;
import dev.cohort.testkit.JvmWorkers;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The DJL program of docs/DJL.md ({@link TrainFashionMnist}: its own argument parser, DJL's
 * PyTorch engine, an MLP on Fashion-MNIST) as a user runs it: under {@code cohort run} with the
 * engine named by {@code COHORT_BACKEND}, on this module's class path, which holds cohort-torch
 * and JavaCPP's libtorch beside DJL. The program initializes the backend before it loads DJL's
 * engine, the order that crashed while initializing a backend loaded JavaCPP's libtorch.
 */
@ExtendWith(RealData.Required.class)
class DjlProgramTest {

    private static final String PROGRAM = "src/test/java/com/example/TrainFashionMnist.java";

    @TempDir
    Path dir;

    /** 20 steps of batch 64 (2 × 32 on two workers), the same shuffled order in both runs. */
    @Test
    @Timeout(value = 150, unit = TimeUnit.SECONDS)
    void twoWorkersUnderCohortRunEndWithTheParametersOfOneProcessOnTheirBatchesTogether() throws Exception {
        float[] two = run(2);
        float[] one = run(1);
        assertThat(two).hasSameSizeAs(one).hasSize(784 * 128 + 128 + 128 * 10 + 10);
        for (int i = 0; i < one.length; i++) {
            float tolerance = Math.max(1e-5f * Math.abs(one[i]), 1e-6f);
            assertThat(two[i]).as("parameter value %d", i).isCloseTo(one[i], Offset.offset(tolerance));
        }
    }

    @Test
    @Timeout(value = 10, unit = TimeUnit.SECONDS)
    void theProgramRefusesAnOptionOfCohortsAsItsOwnParserWould() {
        assertThatThrownBy(() -> TrainFashionMnist.main(new String[] {"--distributed-backend", "tcp"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("unknown option --distributed-backend; usage: ");
    }

    /** docs/DJL.md's first program is this test's program, word for word. */
    @Test
    @Timeout(value = 10, unit = TimeUnit.SECONDS)
    void djlMdShowsThisProgram() throws IOException {
        String doc = Files.readString(Path.of("../docs/DJL.md"));
        Matcher block = Pattern.compile("```java\n(.*?)```", Pattern.DOTALL).matcher(doc);
        assertThat(block.find()).as("a java block in docs/DJL.md").isTrue();
        assertThat(block.group(1)).isEqualTo(Files.readString(Path.of(PROGRAM)));
    }

    /** The root's parameters after {@code cohort run --nproc-per-node workers} of the program. */
    private float[] run(int workers) throws Exception {
        Path params = dir.resolve("params-" + workers + ".txt");
        Path log = dir.resolve("run-" + workers + ".txt");
        List<String> cmd = new ArrayList<>(JvmWorkers.javaCommand(
                LauncherMain.class,
                List.of(),
                List.of(
                        "--nproc-per-node",
                        Integer.toString(workers),
                        "--master-port",
                        "0",
                        "--",
                        TrainFashionMnist.class.getName(),
                        "--limit",
                        "1280",
                        "--batch-size",
                        "64",
                        "--save",
                        params.toString())));
        ProcessBuilder builder =
                new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
        builder.environment().put("COHORT_BACKEND", "tcp");
        builder.environment().put("DJL_OFFLINE", "true");
        builder.environment()
                .put(
                        "DJL_CACHE_DIR",
                        Path.of("target/djl-cache").toAbsolutePath().toString());
        Process launcher = builder.start();
        if (!launcher.waitFor(100, TimeUnit.SECONDS)) {
            launcher.destroyForcibly(); // the launcher stops its workers when it goes (see OrphanGuard)
            throw new AssertionError(
                    "cohort run of " + workers + " worker(s) did not end within 100 s:\n" + Files.readString(log));
        }
        String output = Files.readString(log);
        assertThat(launcher.exitValue())
                .as("exit code of cohort run; its output:\n%s", output)
                .isZero();
        assertThat(output).contains("trained 1 epoch(s) of 1280 images on " + workers + " worker(s) (tcp)");
        List<String> lines = Files.readAllLines(params);
        float[] values = new float[lines.size()];
        for (int i = 0; i < values.length; i++) {
            values[i] = Float.parseFloat(lines.get(i));
        }
        return values;
    }
}
