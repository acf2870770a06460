package dev.cohort.torch;

import dev.cohort.api.Backends;
import dev.cohort.api.DistributedBackend;
import dev.cohort.testkit.WorkerProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.bytedeco.pytorch.global.torch;

/**
 * A worker process of {@link JoinTest}: the uneven-input run ({@link JoinTraining}) on the backend
 * {@code args[1]}; rank r writes its weights to {@code args[0]/<backend>-rank-r.txt}.
 */
public final class JoinWorker {

    public static void main(String[] args) {
        WorkerProcess.main(() -> {
            try (DistributedBackend backend = Backends.select(args[1])) {
                backend.initialize();
                torch.set_num_threads(1);
                float[] w = JoinTraining.distributed(backend, "sgd", 0, false, JoinTraining.BATCHES)
                        .weights();
                Files.writeString(Path.of(args[0], args[1] + "-rank-" + backend.rank() + ".txt"), Arrays.toString(w));
                backend.barrier();
            }
        });
    }
}
