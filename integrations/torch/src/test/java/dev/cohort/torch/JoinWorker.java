package dev.cohort.torch;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * A worker process of {@link JoinTest}: the uneven-input run ({@link JoinTraining}) on the backend
 * {@code args[1]}; rank r writes its weights to {@code args[0]/<backend>-rank-r.txt}.
 */
public final class JoinWorker {

    public static void main(String[] args) {
        ProcessRanks.asRank(args[1], backend -> {
            float[] w = JoinTraining.distributed(backend, "sgd", 0, false, JoinTraining.BATCHES)
                    .weights();
            Files.writeString(Path.of(args[0], args[1] + "-rank-" + backend.rank() + ".txt"), Arrays.toString(w));
        });
    }
}
