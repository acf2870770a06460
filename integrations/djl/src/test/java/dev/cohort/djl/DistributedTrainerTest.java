package dev.cohort.djl;

import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * DJL training on N processes over the tcp engine equals one process training on the N shards'
 * batches together: the same parameters within 1e-5 relative, with a hand-written loop, with
 * {@code EasyTrain.fit}, and with gradient accumulation. Every rank starts from other random
 * parameters, so equality also shows that the root's parameters reached every rank.
 */
class DistributedTrainerTest {

    private static final int BATCH = 4;
    private static final int STEPS = 6;

    @TempDir
    Path tmp;

    /** The root's parameters after training {@code world} ranks of batch {@code batch}. */
    private float[] train(int world, String mode, int batch, int steps, int accumulation) {
        return DjlRuns.train(tmp, world, mode, batch, steps, accumulation);
    }

    @ParameterizedTest(name = "world {0}")
    @ValueSource(ints = {2, 3})
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void shardsTrainAsOneProcessOnTheirBatchesTogether(int world) {
        float[] alone = train(1, "loop", world * BATCH, STEPS, 1);
        float[] together = train(world, "loop", BATCH, STEPS, 1);
        DjlRuns.assertClose(together, alone);
    }

    @Test
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void easyTrainFitDistributesAsTheHandWrittenLoop() {
        DjlRuns.assertClose(train(2, "fit", BATCH, STEPS, 1), train(1, "fit", 2 * BATCH, STEPS, 1));
    }

    @Test
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void accumulatedStepsEqualOneStepOnAllTheirBatches() {
        DjlRuns.assertClose(train(2, "loop", BATCH, 3, 2), train(1, "loop", 2 * 2 * BATCH, 3, 1));
    }
}
