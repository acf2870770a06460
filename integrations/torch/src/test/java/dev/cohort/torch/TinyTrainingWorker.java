package dev.cohort.torch;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * A worker process of the equivalence test: trains on the backend named {@code args[1]} with
 * gradient buckets of {@code args[2]} bytes, gradients sent as {@code args[3]} (none, bf16 or
 * fp16), then rank r writes its weights to {@code args[0]/rank-r.txt} and prints {@code BUCKETS
 * <in shared memory> OF <all>}. With {@code args[4]} "variants" it then runs every {@link
 * TinyTraining#VARIANTS variant} too, writing {@code args[0]/rank-r-<variant>.txt}.
 */
public final class TinyTrainingWorker {

    public static void main(String[] args) {
        ProcessRanks.asRank(args[1], backend -> {
            float[] w = TinyTraining.distributed(
                    backend, Long.parseLong(args[2]), true, 1, false, TinyTraining.Variant.PLAIN, args[3]);
            Files.writeString(Path.of(args[0], "rank-" + backend.rank() + ".txt"), Arrays.toString(w));
            System.out.println("BUCKETS " + TinyTraining.lastBuckets.get());
            if (args.length > 4 && args[4].equals("variants")) {
                for (String variant : TinyTraining.VARIANTS) {
                    float[] v = TinyTraining.variant(backend, variant);
                    Files.writeString(Path.of(args[0], fileName(backend.rank(), variant)), Arrays.toString(v));
                }
            }
        });
    }

    /** Where rank {@code rank} writes its weights after {@code variant}. */
    static String fileName(int rank, String variant) {
        return "rank-" + rank + "-" + variant.replace(' ', '-') + ".txt";
    }
}
