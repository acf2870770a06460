package dev.cohort.djl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.cohort.testkit.JvmWorkers;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * DJL training on N processes over the tcp engine (some cases on shm too) equals one process
 * training on the N shards' batches together: the same parameters within 1e-5 relative, with a hand-written loop, with
 * {@code EasyTrain.fit}, and with gradient accumulation. Every rank starts from other random
 * parameters, so equality also shows that the root's parameters reached every rank.
 */
class DistributedTrainerTest {

    private static final int BATCH = 4;
    private static final int STEPS = 6;

    @TempDir
    Path tmp;

    /** The root's parameters after training {@code world} ranks of batch {@code batch}. */
    private float[] train(int world, String mode, int batch, int steps, int accumulation, String... options) {
        return DjlRuns.train(tmp, world, mode, batch, steps, accumulation, options);
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

    /** clipGradNorm clips the averaged gradients: two ranks clip as one process clips its own. */
    @Test
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void clippingTheAveragedGradientsEqualsClippingOneProcesssGradients() {
        DjlRuns.Run two = DjlRuns.run(tmp, 2, "loop", BATCH, STEPS, 1, "clip=0.05");
        DjlRuns.assertClose(DjlRuns.read(two.params()), train(1, "loop", 2 * BATCH, STEPS, 1, "clip=0.05"));
        assertThat(two.results().get(0).output()).doesNotContain("no step clipped so far");
    }

    /**
     * bf16 on the wire, clipped at every step by the option (as EasyTrain.fit trains): within
     * bf16's rounding of one process on the whole batch, and not equal to it (the gradients did travel
     * rounded).
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("dev.cohort.djl.DjlRuns#engines")
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void bf16GradientsClippedEveryStepTrainWithinRoundingOfOneProcess(Map<String, String> engine) {
        float[] two = DjlRuns.read(
                DjlRuns.ok(DjlRuns.start(tmp, engine, 2, "fit", BATCH, STEPS, 1, "compression=bf16", "clipEvery=0.05"))
                        .params());
        float[] alone = train(1, "fit", 2 * BATCH, STEPS, 1, "clipEvery=0.05");
        float worst = 0;
        for (int i = 0; i < alone.length; i++) {
            assertThat(two[i])
                    .as("parameter value %d", i)
                    .isCloseTo(alone[i], within(1e-4f + 1e-2f * Math.abs(alone[i])));
            worst = Math.max(worst, Math.abs(two[i] - alone[i]));
        }
        // Float32 on the wire differs from one process by about 3e-8 here; bf16 by about 6e-6.
        assertThat(worst).as("the largest difference: bf16 rounding shows").isGreaterThan(1e-6f);
    }

    /**
     * Uneven inputs in a join scope: ranks holding 9, 6 and 4 batches (momentum, the averaged
     * gradients clipped, the loss averaged every step) end with the same parameters, those of one
     * process that at each step trains on the examples of the ranks still holding a batch.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("dev.cohort.djl.DjlRuns#engines")
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void unevenRanksInAJoinScopeTrainAsOneProcessOnTheBatchesThatExist(Map<String, String> engine) {
        Path out = tmp.resolve("join");
        List<String> args = List.of(out.toString(), "9", "6", "4", "clip=0.5");
        JvmWorkers.assertAllOk(DjlRuns.processes(tmp, engine, 3, DjlJoinWorker.class, args, DjlRuns.nextId()));
        Path reference = tmp.resolve("alone");
        List<String> alone = List.of(reference.toString(), "9", "6", "4", "clip=0.5");
        JvmWorkers.assertAllOk(DjlRuns.processes(tmp, Map.of(), 1, DjlJoinWorker.class, alone, DjlRuns.nextId()));
        float[] expected = DjlRuns.read(Path.of(reference + ".0"));
        for (int r = 0; r < 3; r++) {
            DjlRuns.assertClose(DjlRuns.read(Path.of(out + "." + r)), expected);
        }
        assertThat(DjlRuns.read(Path.of(out + ".2"))).isEqualTo(DjlRuns.read(Path.of(out + ".0")));
    }

    /**
     * A BatchNorm's running statistics, computed by each rank from its own batches, are averaged
     * after every update: the divergence check, run at every step, finds the ranks alike.
     */
    @Test
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void batchNormStatisticsStayTheSameOnEveryRank() {
        JvmWorkers.assertAllOk(
                DjlRuns.start(tmp, Map.of("COHORT_DIVERGENCE_CHECK", "1"), 2, "loop", BATCH, STEPS, 1, "batchnorm=true")
                        .results());
    }

    /**
     * ZeRO stage 1 with Adam: each rank updates and keeps Adam's state for its share of the
     * parameters only, and the two ranks train as one process on their batches together.
     */
    @Test
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void zeroStageOneShardsTheOptimizerStateAndTrainsAsOneProcess() {
        DjlRuns.Run two = DjlRuns.run(tmp, 2, "loop", BATCH, STEPS, 1, "optimizer=adam", "zero=1");
        DjlRuns.assertClose(DjlRuns.read(two.params()), train(1, "loop", 2 * BATCH, STEPS, 1, "optimizer=adam"));
        // The MLP's 4 parameters (256, 32, 128 and 4 elements): rank 0 owns the first, rank 1 the others.
        assertThat(two.results().get(0).output()).contains("optimizer state for 1 of 4 parameters");
        assertThat(two.results().get(1).output()).contains("optimizer state for 3 of 4 parameters");
    }

    /**
     * ZeRO stage 2 with Adam on three ranks, the averaged gradients clipped: each rank receives the
     * average of its share only (reduced to it, not allreduced), the global norm is summed over the
     * shares, and the ranks train as one process on their batches together.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("dev.cohort.djl.DjlRuns#engines")
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void zeroStageTwoReducesEachShareToItsOwnerAndTrainsAsOneProcess(Map<String, String> engine) {
        DjlRuns.Run three = DjlRuns.ok(
                DjlRuns.start(tmp, engine, 3, "loop", BATCH, STEPS, 1, "optimizer=adam", "zero=2", "clip=0.05"));
        DjlRuns.assertClose(
                DjlRuns.read(three.params()), train(1, "loop", 3 * BATCH, STEPS, 1, "optimizer=adam", "clip=0.05"));
        assertThat(three.results().get(0).output()).doesNotContain("no step clipped so far");
        // The MLP's 4 parameters (256, 32, 128 and 4 elements) among 3: ranks 0 and 1 one each, rank 2 the last two.
        assertThat(three.results().get(1).output()).contains("optimizer state for 1 of 4 parameters");
        assertThat(three.results().get(2).output()).contains("optimizer state for 2 of 4 parameters");
    }

    @Test
    void aParameterOffTheCpuIsRefusedNamingIt() {
        DistributedTrainer.requireHostMemory("dense_weight", ai.djl.Device.cpu());
        assertThatThrownBy(() -> DistributedTrainer.requireHostMemory("dense_weight", ai.djl.Device.gpu(1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith(
                        "parameter 'dense_weight' is on gpu(1); Cohort averages gradients in host memory");
    }

    @Test
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void accumulatedStepsEqualOneStepOnAllTheirBatches() {
        DjlRuns.assertClose(train(2, "loop", BATCH, 3, 2), train(1, "loop", 2 * 2 * BATCH, 3, 1));
    }
}
