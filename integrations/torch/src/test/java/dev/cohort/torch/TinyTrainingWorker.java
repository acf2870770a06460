package dev.cohort.torch;

import dev.cohort.api.Backends;
import dev.cohort.api.DistributedBackend;
import dev.cohort.testkit.WorkerProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.bytedeco.pytorch.global.torch;

/**
 * A worker process of the equivalence test: trains on the backend named {@code args[1]} (default
 * gloo) with gradient buckets of {@code args[2]} bytes (default 25 MiB), gradients sent as
 * {@code args[3]} (none, bf16 or fp16; default none), then rank r writes its weights to
 * {@code args[0]/rank-r.txt} and prints {@code BUCKETS <in shared memory> OF <all>}.
 */
public final class TinyTrainingWorker {

    public static void main(String[] args) {
        WorkerProcess.main(() -> {
            try (DistributedBackend backend = Backends.select(args.length > 1 ? args[1] : "gloo")) {
                backend.initialize();
                torch.set_num_threads(1);
                long bucketBytes = args.length > 2 ? Long.parseLong(args[2]) : 25L << 20;
                String compression = args.length > 3 ? args[3] : "none";
                float[] w = TinyTraining.distributed(
                        backend, bucketBytes, true, 1, false, TinyTraining.Variant.PLAIN, compression);
                Files.writeString(Path.of(args[0], "rank-" + backend.rank() + ".txt"), Arrays.toString(w));
                System.out.println("BUCKETS " + TinyTraining.lastBuckets.get());
                backend.barrier();
            }
        });
    }
}
