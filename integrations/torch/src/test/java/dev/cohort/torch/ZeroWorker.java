package dev.cohort.torch;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * A worker process of the ZeRO test: AdamW with clipping at ZeRO stage {@code args[2]} on the
 * backend {@code args[1]}; mode {@code args[4]} {@code save} trains every step and saves a sharded
 * checkpoint {@code args[3]} half-way, {@code resume} loads it and trains the rest. Rank r writes
 * its weights to {@code args[0]/<mode>-rank-r.txt}.
 */
public final class ZeroWorker {

    public static void main(String[] args) {
        ProcessRanks.asRank(args[1], backend -> {
            Path checkpoint = Path.of(args[3]);
            boolean save = args[4].equals("save");
            int half = TinyTraining.STEPS / 2;
            float[] w = ZeroTraining.distributed(
                    backend,
                    new ZeroTraining.Run(
                            "adamw",
                            Integer.parseInt(args[2]),
                            "none",
                            true,
                            checkpoint,
                            save ? -1 : half,
                            save ? half : -1,
                            TinyTraining.STEPS));
            Files.writeString(Path.of(args[0], args[4] + "-rank-" + backend.rank() + ".txt"), Arrays.toString(w));
        });
    }
}
