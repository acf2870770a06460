package dev.cohort.torch;

import dev.cohort.gloo.GlooBackend;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.bytedeco.pytorch.global.torch;

/** A gloo worker process of the equivalence test: trains, then rank r writes its weights to args[0]/rank-r.txt. */
public final class TinyTrainingWorker {

    public static void main(String[] args) throws Exception {
        try (GlooBackend backend = new GlooBackend()) {
            backend.initialize();
            torch.set_num_threads(1);
            float[] w = TinyTraining.distributed(backend);
            Files.writeString(Path.of(args[0], "rank-" + backend.rank() + ".txt"), Arrays.toString(w));
            backend.barrier();
        } catch (Throwable t) {
            t.printStackTrace(System.out);
            System.out.flush();
            Runtime.getRuntime().halt(1);
        }
        System.exit(0);
    }
}
