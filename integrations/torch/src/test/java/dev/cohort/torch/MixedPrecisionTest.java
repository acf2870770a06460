package dev.cohort.torch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.cohort.api.DistributeRequest;
import dev.cohort.api.Join;
import dev.cohort.libtorch.LibTorch;
import dev.cohort.testkit.JvmWorkers.Result;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.LinearImpl;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Mixed precision: forward under libtorch's CPU autocast with float32 parameters, fp16 with a loss
 * scale whose skip decision every rank shares. A distributed run must end where the same run on
 * one rank with the whole batch ends, within what 16-bit arithmetic allows.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class MixedPrecisionTest {

    private static final Duration RANKS_LIMIT = Duration.ofSeconds(60);

    /**
     * How far (largest relative difference of a weight) two runs of the tiny problem may end apart
     * in 16-bit compute: the ranks' halves of the batch round their partial sums differently from
     * the whole batch, by up to a unit in the last place (8 bits of mantissa at bf16, 11 at fp16).
     * Measured: bf16 0.019, fp16 0.0011; bf16 against float32 0.027, fp16 0.0033.
     */
    private static double tolerance(Precision precision) {
        return precision == Precision.BF16 ? 4e-2 : 5e-3;
    }

    @TempDir
    Path tmp;

    @BeforeAll
    static void load() {
        LibTorch.load();
    }

    @Test
    void autocastComputesIn16BitsWithFloat32WeightsAndRestoresTheThreadsState() {
        LinearImpl linear = new LinearImpl(4, 2);
        Tensor x = torch.ones(3, 4);
        try (Autocast bf16 = Autocast.open(Precision.BF16)) {
            assertThat(linear.forward(x).scalar_type().value).isEqualTo(torch.ScalarType.BFloat16.value);
            try (Autocast fp16 = Autocast.open(Precision.FP16)) {
                assertThat(linear.forward(x).scalar_type().value).isEqualTo(torch.ScalarType.Half.value);
            }
            assertThat(linear.forward(x).scalar_type().value)
                    .as("the outer scope's type again")
                    .isEqualTo(torch.ScalarType.BFloat16.value);
            try (Autocast fp32 = Autocast.open(Precision.FP32)) {
                assertThat(linear.forward(x).scalar_type().value)
                        .as("fp32 changes nothing")
                        .isEqualTo(torch.ScalarType.BFloat16.value);
            }
        }
        assertThat(linear.forward(x).scalar_type().value).isEqualTo(torch.ScalarType.Float.value);
        assertThat(linear.weight().scalar_type().value).isEqualTo(torch.ScalarType.Float.value);
        assertThat(torch.is_autocast_enabled(torch.DeviceType.CPU)).isFalse();

        Autocast opened = Autocast.open(Precision.BF16);
        Thread other = new Thread(() -> assertThatThrownBy(opened::close)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("must be closed there"));
        other.start();
        assertThat(joined(other)).isTrue();
        opened.close();
        assertThat(torch.is_autocast_enabled(torch.DeviceType.CPU)).isFalse();
    }

    @ParameterizedTest(name = "{0}, ZeRO stage {1}")
    @CsvSource({"bf16, 0", "fp16, 0", "bf16, 2", "fp16, 1"})
    void twoThreadRanksEndWhereOneRankWithTheWholeBatchEnds(String precision, int stage) {
        PrecisionWorker.Run run = PrecisionWorker.Run.of(Precision.of(precision), stage);
        float[] one = ThreadRanks.run(1, RANKS_LIMIT, b -> PrecisionWorker.train(b, run))
                .get(0);
        List<float[]> two = ThreadRanks.run(2, RANKS_LIMIT, b -> PrecisionWorker.train(b, run));
        assertThat(two.get(1)).as("ranks agree exactly").containsExactly(two.get(0));
        assertThat(TinyTraining.maxRelativeDifference(two.get(0), one)).isLessThan(tolerance(run.precision()));
        float[] float32 = ThreadRanks.run(
                        1, RANKS_LIMIT, b -> PrecisionWorker.train(b, PrecisionWorker.Run.of(Precision.FP32, 0)))
                .get(0);
        assertThat(TinyTraining.maxRelativeDifference(one, float32))
                .as("autocast computed in 16 bits")
                .isGreaterThan(1e-4)
                .isLessThan(2 * tolerance(run.precision()));
    }

    @Test
    void anOverflowInOneRanksShardSkipsTheStepOnEveryRankAndHalvesTheScale() {
        // ZeRO stage 2 at world 2: rank 1 alone receives fc2's averaged bias gradient, so only its
        // shard overflows; without the agreed flag rank 0 would step and the ranks would diverge.
        PrecisionWorker.Run run = new PrecisionWorker.Run(Precision.FP16, 2, 1024, 2, 3, 0, null, -1, false);
        List<double[]> scales = ThreadRanks.run(2, RANKS_LIMIT, b -> scaleAndWeights(b, run));
        assertThat(scales.get(1)).containsExactly(scales.get(0));
        // Window 2 from 1024: steps 0-1 double the scale to 2048, step 2 counts one, step 3
        // overflows and halves it to 1024, steps 4-5 double it to 2048.
        assertThat(scales.get(0)[1]).as("skipped steps").isEqualTo(1);
        assertThat(scales.get(0)[0]).as("loss scale").isEqualTo(2048);
    }

    @Test
    void unevenInputsAtFp16KeepEveryRanksLossScaleAndWeightsTheSame() {
        // Three ranks of 6, 5 and 3 batches at ZeRO 2: at step 4 rank 0 overflows fc2's bias, in
        // the shard of rank 2, which has joined and only shadows the others' averaging and step.
        int[] batches = {6, 5, 3};
        List<double[]> ranks = ThreadRanks.run(3, RANKS_LIMIT, backend -> {
            int rank = backend.rank();
            TinyTraining.Net model = new TinyTraining.Net(rank);
            DistributedOptimizer optimizer;
            try (PointerScope scope = new PointerScope()) {
                optimizer = (DistributedOptimizer)
                        backend.distribute(DistributeRequest.of((Module) model, TinyTraining.sgd(model), null, null)
                                        .withOption(TorchDistributor.PRECISION, "fp16")
                                        .withOption(TorchDistributor.ZERO_STAGE, 2)
                                        .withOption(TorchDistributor.INITIAL_LOSS_SCALE, 1024)
                                        .withOption(TorchDistributor.LOSS_SCALE_WINDOW, 2))
                                .optimizer();
            }
            try (Join join = backend.join(optimizer)) {
                for (int s = 0; s < batches[rank]; s++) {
                    try (PointerScope scope = new PointerScope()) {
                        optimizer.zero_grad();
                        MiniBatch b = TinyTraining.batch(s, rank * 4, 4);
                        Tensor loss;
                        try (Autocast autocast = optimizer.autocast()) {
                            loss = torch.cross_entropy(model.forward(b.inputs()), b.targets());
                        }
                        optimizer.scaleLoss(loss).backward();
                        if (s == 4 && rank == 0) {
                            model.fc2.bias().grad().fill_(new Scalar(Double.POSITIVE_INFINITY));
                        }
                        optimizer.step();
                    }
                }
            }
            return lossScaleAndWeights(optimizer, TinyTraining.weights(model));
        });
        assertThat(ranks.get(1)).containsExactly(ranks.get(0));
        assertThat(ranks.get(2)).containsExactly(ranks.get(0));
        // Window 2 from 1024: steps 0-3 double it twice, step 4 overflows (4096 -> 2048), step 5 counts one.
        assertThat(ranks.get(0)[0]).as("loss scale").isEqualTo(2048);
        assertThat(ranks.get(0)[1]).as("skipped steps").isEqualTo(1);
    }

    @Test
    void anFp16CheckpointResumesWithItsLossScaleExactly() {
        Path file = tmp.resolve("fp16.pt");
        // Window 2 and an overflow at step 1: the scale changes on both sides of the save at 3.
        PrecisionWorker.Run straight = new PrecisionWorker.Run(Precision.FP16, 0, 1024, 2, 1, 1, file, 3, false);
        List<double[]> uninterrupted = ThreadRanks.run(2, RANKS_LIMIT, b -> scaleAndWeights(b, straight));
        PrecisionWorker.Run resumed = new PrecisionWorker.Run(Precision.FP16, 0, 1024, 2, 1, 1, file, -1, true);
        List<double[]> fromCheckpoint = ThreadRanks.run(2, RANKS_LIMIT, b -> scaleAndWeights(b, resumed));
        assertThat(fromCheckpoint.get(0)).containsExactly(uninterrupted.get(0));
        assertThat(fromCheckpoint.get(1)).containsExactly(uninterrupted.get(1));
        assertThat(uninterrupted.get(0)[1])
                .as("skipped steps, kept in the checkpoint")
                .isEqualTo(1);
    }

    /** The loss scale, the skipped steps, then the weights, after {@code run} on this rank. */
    private static double[] scaleAndWeights(dev.cohort.api.DistributedBackend backend, PrecisionWorker.Run run) {
        float[] w = PrecisionWorker.train(backend, run);
        return lossScaleAndWeights(PrecisionWorker.lastOptimizer.get(), w);
    }

    private static double[] lossScaleAndWeights(DistributedOptimizer o, float[] w) {
        double[] out = new double[w.length + 2];
        out[0] = o.lossScale();
        out[1] = o.skippedSteps();
        for (int i = 0; i < w.length; i++) {
            out[i + 2] = w[i];
        }
        return out;
    }

    @Test
    void lossScalingOptionsOutsideFp16AndUnknownPrecisionsAreRefused() {
        ThreadRanks.run(1, RANKS_LIMIT, backend -> {
            TinyTraining.Net model = new TinyTraining.Net(0);
            assertThatThrownBy(() ->
                            backend.distribute(DistributeRequest.of((Module) model, TinyTraining.sgd(model), null, null)
                                    .withOption(TorchDistributor.PRECISION, "bf16")
                                    .withOption(TorchDistributor.INITIAL_LOSS_SCALE, 128)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("precision bf16 scales no loss");
            assertThatThrownBy(() ->
                            backend.distribute(DistributeRequest.of((Module) model, TinyTraining.sgd(model), null, null)
                                    .withOption(TorchDistributor.PRECISION, "int8")))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("precision must be fp32, bf16 or fp16, got 'int8'");
            return null;
        });
    }

    @Test
    void aLossThatIsNotFiniteAtScaleOneIsNamedInsteadOfSkippingForever() {
        PrecisionWorker.Run run = new PrecisionWorker.Run(Precision.FP16, 0, 1, 2000, 2, 1, null, -1, false);
        assertThatThrownBy(() -> ThreadRanks.run(2, RANKS_LIMIT, b -> PrecisionWorker.train(b, run)))
                .hasStackTraceContaining("the loss or the data is not finite");
    }

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void inProcessesBf16OnGlooAndFp16OnShmEndWhereOneRankEnds() throws Exception {
        String second = ProcessRanks.shmAvailable() ? "shm" : "gloo";
        List<Result> bf16 = workers("gloo", "bf16");
        List<Result> fp16 = workers(second, "fp16");
        ProcessRanks.assertAllExitedZero(bf16);
        ProcessRanks.assertAllExitedZero(fp16);
        for (Precision p : List.of(Precision.BF16, Precision.FP16)) {
            float[] one = ThreadRanks.run(1, RANKS_LIMIT, b -> PrecisionWorker.train(b, PrecisionWorker.Run.of(p, 0)))
                    .get(0);
            float[] rank0 = EquivalenceTest.parse(Files.readString(tmp.resolve(p + "-rank-0.txt")));
            float[] rank1 = EquivalenceTest.parse(Files.readString(tmp.resolve(p + "-rank-1.txt")));
            assertThat(rank1).containsExactly(rank0);
            assertThat(TinyTraining.maxRelativeDifference(rank0, one)).isLessThan(tolerance(p));
        }
    }

    private List<Result> workers(String engine, String precision) {
        return ProcessRanks.run(
                2,
                PrecisionWorker.class,
                List.of(tmp.toString(), engine, precision, "0"),
                "precision-" + precision,
                tmp.resolve("logs-" + precision),
                Duration.ofSeconds(100));
    }

    private static boolean joined(Thread t) {
        try {
            t.join(10_000);
            return !t.isAlive();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
