package dev.cohort.examples;

import static org.assertj.core.api.Assertions.assertThat;

import com.example.firsthour.SimpleMnist;
import dev.cohort.launcher.LaunchOptions;
import dev.cohort.launcher.LaunchResult;
import dev.cohort.launcher.Launcher;
import dev.cohort.launcher.WorkerProgram;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A JavaCPP PyTorch program written as its users write them ({@link SimpleMnist}), made
 * data-parallel with the changes docs/TORCH.md shows, trains on two worker processes under the
 * launcher to the parameters one process reaches on the whole batch.
 */
class FirstHourTest {

    private static final int EXAMPLES = 3200;

    @TempDir
    Path dir;

    @Test
    @Timeout(value = 150, unit = TimeUnit.SECONDS)
    void aJavaCppProgramMadeDistributedFromTheDocsTrainsAsOneProcessOnTheWholeBatch() throws Exception {
        unpackTrainingSplit();
        Path two = dir.resolve("two.bin");
        Path one = dir.resolve("one.bin");
        FashionMnistTrainerTest.TimedConsole console = new FashionMnistTrainerTest.TimedConsole();
        run(2, 32, two, console);
        run(1, 64, one, console);
        assertThat(console.text()).contains(" on 2 workers").contains(" on 1 workers");
        assertThat(loss(console, 2)).isLessThan(loss(console, 1)); // it learns
        float[] distributed = floats(two);
        float[] single = floats(one);
        assertThat(distributed)
                .hasSize(784 * 64 + 64 + 64 * 32 + 32 + 32 * 10 + 10)
                .hasSameSizeAs(single);
        for (int i = 0; i < single.length; i++) {
            assertThat(Math.abs(distributed[i] - single[i]))
                    .as("parameter element %d", i)
                    .isLessThanOrEqualTo(1e-5f * Math.max(1f, Math.abs(single[i])));
        }
    }

    private void run(int workers, int batchPerWorker, Path out, FashionMnistTrainerTest.TimedConsole console)
            throws Exception {
        Path mnist = dir.resolve("mnist");
        LaunchOptions options =
                LaunchOptions.builder().nprocPerNode(workers).masterPort(0).build();
        WorkerProgram program = WorkerProgram.mainClass(
                SimpleMnist.class.getName(),
                List.of(
                        mnist.toString(),
                        Integer.toString(batchPerWorker),
                        Integer.toString(EXAMPLES),
                        out.toString()));
        LaunchResult result;
        try (Launcher launcher = new Launcher(options, program).console(console.console())) {
            result = launcher.run();
        }
        assertThat(result.exitCode()).as(result.message()).isZero();
    }

    /** The loss the first run printed for {@code epoch}. */
    private static double loss(FashionMnistTrainerTest.TimedConsole console, int epoch) {
        String line = console.findStart("[rank 0] epoch " + epoch + ": loss ")
                .orElseThrow()
                .text();
        return Double.parseDouble(line.split(" ")[5]);
    }

    /** The training split of the installed Fashion-MNIST, unpacked where libtorch's MNIST reader looks. */
    private void unpackTrainingSplit() throws IOException {
        RealData.assumeInstalled();
        Path mnist = Files.createDirectories(dir.resolve("mnist"));
        for (String name : List.of("train-images-idx3-ubyte", "train-labels-idx1-ubyte")) {
            try (InputStream in = new GZIPInputStream(Files.newInputStream(RealData.DIR.resolve(name + ".gz")))) {
                Files.copy(in, mnist.resolve(name));
            }
        }
    }

    private static float[] floats(Path file) throws IOException {
        float[] values = new float[(int) (Files.size(file) / 4)];
        try (DataInputStream in = new DataInputStream(Files.newInputStream(file))) {
            for (int i = 0; i < values.length; i++) {
                values[i] = in.readFloat();
            }
        }
        return values;
    }
}
