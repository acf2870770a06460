import dev.cohort.api.checkpoint.CheckpointFile;
import dev.cohort.api.checkpoint.TrainingPosition;
import dev.cohort.libtorch.LibTorch;
import dev.cohort.torch.Checkpoints;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.bytedeco.pytorch.LinearImpl;
import org.bytedeco.pytorch.SGD;
import org.bytedeco.pytorch.SGDOptions;
import org.bytedeco.pytorch.global.torch;

/**
 * How long training pauses for a checkpoint: Checkpoints.save (written, flushed, renamed) against
 * Checkpoints.saveAsync (staged in memory; the rest in the background), for a 4096x4096 linear
 * layer (16.8 M parameters) with SGD momentum (as much state again): 134 MB a file. Medians of 7,
 * into DIR (default /tmp), each async save awaited before the next is timed.
 *
 * Run: java -cp "$(cat examples/target/classpath.txt):examples/target/classes" scripts/CheckpointPause.java [DIR]
 */
public class CheckpointPause {
    public static void main(String[] args) throws Exception {
        LibTorch.load();
        Path dir = Files.createTempDirectory(Path.of(args.length > 0 ? args[0] : "/tmp"), "checkpoint-pause");
        LinearImpl model = new LinearImpl(4096, 4096);
        SGDOptions options = new SGDOptions(0.01);
        options.momentum().put(0.9);
        SGD sgd = new SGD(model.parameters(), options);
        model.forward(torch.randn(8, 4096)).sum().backward();
        sgd.step(); // momentum buffers exist from here
        Path file = dir.resolve("checkpoint.pt");
        int runs = 7;
        double[] sync = new double[runs];
        double[] pause = new double[runs];
        double[] background = new double[runs];
        for (int i = 0; i < runs + 1; i++) { // the first of each: a warm-up
            long t0 = System.nanoTime();
            Checkpoints.save(file, model, sgd, new TrainingPosition(0, i, i));
            long t1 = System.nanoTime();
            Checkpoints.saveAsync(file, model, sgd, new TrainingPosition(0, i, i), null);
            long t2 = System.nanoTime();
            CheckpointFile.awaitWrites();
            long t3 = System.nanoTime();
            if (i > 0) {
                sync[i - 1] = (t1 - t0) / 1e6;
                pause[i - 1] = (t2 - t1) / 1e6;
                background[i - 1] = (t3 - t2) / 1e6;
            }
        }
        System.out.printf("file %d MB in %s%n", Files.size(file) >> 20, dir);
        System.out.printf("save (sync): median %.1f ms %s%n", median(sync), Arrays.toString(sync));
        System.out.printf("saveAsync pause: median %.1f ms %s%n", median(pause), Arrays.toString(pause));
        System.out.printf("saveAsync background part: median %.1f ms%n", median(background));
        System.out.printf("pause / sync: %.3f%n", median(pause) / median(sync));
        Files.deleteIfExists(file);
        Files.deleteIfExists(dir);
    }

    private static double median(double[] values) {
        double[] v = values.clone();
        Arrays.sort(v);
        return v[v.length / 2];
    }
}
