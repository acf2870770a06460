package dev.cohort.torch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.cohort.api.DistributeRequest;
import dev.cohort.api.checkpoint.TrainingPosition;
import dev.cohort.libtorch.LibTorch;
import dev.cohort.testkit.JvmWorkers.Result;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.bytedeco.pytorch.LinearImpl;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Optimizer;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * ZeRO stages 1 and 2: sharded training equals one process on the whole batch within 1e-5, each
 * rank holds about 1/N of the optimizer state, and sharded checkpoints resume exactly on the same
 * world and re-shard onto another.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class ZeroTest {

    private static final int STEPS = TinyTraining.STEPS;

    @TempDir
    Path tmp;

    @BeforeAll
    static void load() {
        LibTorch.load();
        torch.set_num_threads(1);
    }

    /** How long a threads-engine world of this test may take. */
    private static final Duration RANKS_LIMIT = Duration.ofSeconds(80);

    @ParameterizedTest(name = "stage {0}, {1}, world {2}, clipped {3}")
    @CsvSource({
        "1, sgd, 2, false",
        "1, adam, 3, false",
        "1, adamw, 2, true",
        "2, sgd, 3, true",
        "2, adam, 2, false",
        "2, adamw, 3, true"
    })
    void shardedTrainingEqualsOneProcessOnTheWholeBatch(int stage, String kind, int world, boolean clip) {
        float[] reference = ZeroTraining.single(kind, clip, STEPS);
        List<float[]> weights = ThreadRanks.run(
                world,
                RANKS_LIMIT,
                backend -> ZeroTraining.distributed(backend, ZeroTraining.Run.of(kind, stage, "none", clip, STEPS)));
        for (float[] w : weights) {
            assertThat(TinyTraining.maxRelativeDifference(w, reference)).isLessThan(1e-5);
            assertThat(w).containsExactly(weights.get(0)); // every rank holds the owners' bits
        }
    }

    @Test
    void stageTwoCompressedIsNearTheFloat32Result() {
        float[] reference = ZeroTraining.single("sgd", false, STEPS);
        List<float[]> weights = ThreadRanks.run(
                2,
                RANKS_LIMIT,
                backend -> ZeroTraining.distributed(backend, ZeroTraining.Run.of("sgd", 2, "bf16", false, STEPS)));
        for (float[] w : weights) {
            assertThat(TinyTraining.maxRelativeDifference(w, reference))
                    .isLessThan(2e-2)
                    .isGreaterThan(0);
            assertThat(w).containsExactly(weights.get(0));
        }
    }

    /** Four equal layers, so that whole parameters split evenly over 1, 2 or 4 ranks. */
    static final class Wide extends Module {
        final LinearImpl[] layers = new LinearImpl[4];

        Wide() {
            for (int i = 0; i < layers.length; i++) {
                layers[i] = register_module("fc" + i, new LinearImpl(16, 16));
            }
        }

        Tensor forward(Tensor x) {
            for (LinearImpl layer : layers) {
                x = torch.tanh(layer.forward(x));
            }
            return x;
        }
    }

    @ParameterizedTest(name = "Adam, stage {0}, worlds 1, 2, 4")
    @ValueSource(ints = {1, 2})
    void eachRankHoldsItsShareOfTheOptimizerState(int stage) {
        long whole = 2L * Float.BYTES * (4 * 16 * 16 + 4 * 16); // Adam: two moments per element
        for (int world : new int[] {1, 2, 4}) {
            List<long[]> held = ThreadRanks.run(world, RANKS_LIMIT, backend -> {
                Wide model = new Wide();
                DistributedOptimizer optimizer = (DistributedOptimizer) backend.distribute(DistributeRequest.of(
                                        (Module) model, ZeroTraining.optimizer("adam", model.parameters()), null, null)
                                .withOption(TorchDistributor.ZERO_STAGE, stage))
                        .optimizer();
                optimizer.zero_grad();
                model.forward(torch.ones(3, 16))
                        .pow(new org.bytedeco.pytorch.Scalar(2.0))
                        .mean()
                        .backward();
                optimizer.step();
                return new long[] {
                    optimizer.optimizerStateBytes(), optimizer.shards().shardElements()
                };
            });
            long sum = 0;
            for (long[] h : held) {
                assertThat(h[0])
                        .as("world %d: state of the shard's elements only", world)
                        .isEqualTo(8 * h[1]);
                assertThat(h[0]).as("world %d: 1/N of the state", world).isEqualTo(whole / world);
                sum += h[0];
            }
            assertThat(sum).isEqualTo(whole);
        }
    }

    @Test
    void aShardedCheckpointResumesExactlyOnTheSameWorld() throws Exception {
        Path checkpoint = tmp.resolve("ckpt.pt");
        ZeroTraining.Run uninterrupted = new ZeroTraining.Run("adam", 2, "none", true, checkpoint, -1, 3, STEPS);
        List<float[]> straight =
                ThreadRanks.run(2, RANKS_LIMIT, backend -> ZeroTraining.distributed(backend, uninterrupted));
        assertThat(checkpoint).exists();
        assertThat(Checkpoints.shardFile(checkpoint, 3, 0, 2)).exists();
        assertThat(Checkpoints.shardFile(checkpoint, 3, 1, 2)).exists();
        List<float[]> resumed = ThreadRanks.run(
                2,
                RANKS_LIMIT,
                backend -> ZeroTraining.distributed(
                        backend, new ZeroTraining.Run("adam", 2, "none", true, checkpoint, 3, -1, STEPS)));
        for (int r = 0; r < 2; r++) {
            assertThat(resumed.get(r)).containsExactly(straight.get(r));
        }
    }

    @ParameterizedTest(name = "saved at world {0} stage {1}, resumed at world {2} stage {3}")
    @CsvSource({"2, 2, 3, 1", "3, 1, 2, 2", "2, 1, 1, 0", "2, 0, 2, 2"})
    void aCheckpointResumesOnAnotherWorldOrStageReSharded(int savedWorld, int savedStage, int world, int stage) {
        Path checkpoint = tmp.resolve("ckpt.pt");
        ThreadRanks.run(
                savedWorld,
                RANKS_LIMIT,
                backend -> ZeroTraining.distributed(
                        backend, new ZeroTraining.Run("adam", savedStage, "none", false, checkpoint, -1, 3, 3)));
        List<Long> stateBytes = ThreadRanks.run(world, RANKS_LIMIT, backend -> {
            ZeroTraining.distributed(backend, new ZeroTraining.Run("adam", stage, "none", false, checkpoint, 3, -1, 3));
            return ZeroTraining.lastStateBytes.get();
        });
        // Loaded and not yet stepped: the ranks together hold the whole state once (each shard padded to 1/N).
        int elements = TinyTraining.weights(new TinyTraining.Net(0)).length;
        long slice = (elements + world - 1) / world;
        assertThat(stateBytes.stream().mapToLong(Long::longValue).sum())
                .isEqualTo(stage == 0 ? 8L * elements * world : 8L * slice * world);

        float[] reference = ZeroTraining.single("adam", false, STEPS);
        List<float[]> weights = ThreadRanks.run(
                world,
                RANKS_LIMIT,
                backend -> ZeroTraining.distributed(
                        backend, new ZeroTraining.Run("adam", stage, "none", false, checkpoint, 3, -1, STEPS)));
        for (float[] w : weights) {
            assertThat(TinyTraining.maxRelativeDifference(w, reference)).isLessThan(1e-5);
        }
    }

    @Test
    void whatZeroCannotDoIsRefusedWithWhatToDo() {
        ThreadRanks.run(2, RANKS_LIMIT, backend -> {
            TinyTraining.Net model = new TinyTraining.Net(0);
            Optimizer plain = ZeroTraining.optimizer("sgd", model.parameters());
            assertThatThrownBy(() -> backend.distribute(DistributeRequest.of((Module) model, plain, null, null)
                            .withOption(TorchDistributor.ZERO_STAGE, 3)))
                    .hasMessageContaining("'zeroStage' must be 0, 1 or 2, got 3");
            assertThatThrownBy(() -> backend.distribute(DistributeRequest.of((Module) model, plain, null, null)
                            .withOption(TorchDistributor.ZERO_STAGE, 2)
                            .withOption(TorchDistributor.OVERLAP, true)))
                    .hasMessageContaining("stage 2 reduce-scatters the gradients at the step");
            assertThatThrownBy(() -> backend.distribute(DistributeRequest.of((Module) model, plain, null, null)
                            .withOption(TorchDistributor.ZERO_STAGE, 1)
                            .withOption(TorchDistributor.FIND_UNUSED_PARAMETERS, true)))
                    .hasMessageContaining("'findUnusedParameters' cannot be honoured with ZeRO");
            if (backend.rank() == 1) { // state on one rank only: every rank refuses
                Optimizer stepped = ZeroTraining.optimizer("sgd", model.parameters());
                ZeroTraining.loss(model, TinyTraining.batch(0, 0, 2)).backward();
                stepped.step();
                stepped.zero_grad();
                assertThatThrownBy(() -> backend.distribute(DistributeRequest.of((Module) model, stepped, null, null)
                                .withOption(TorchDistributor.ZERO_STAGE, 2)))
                        .hasMessageContaining("the optimizer already has state");
            } else {
                assertThatThrownBy(() -> backend.distribute(DistributeRequest.of((Module) model, plain, null, null)
                                .withOption(TorchDistributor.ZERO_STAGE, 2)))
                        .hasMessageContaining("the optimizer already has state");
            }
            Optimizer sharded = backend.distribute(DistributeRequest.of((Module) model, plain, null, null)
                            .withOption(TorchDistributor.ZERO_STAGE, 1))
                    .optimizer();
            TrainingPosition position = new TrainingPosition(0, 0, 0);
            Path file = Path.of(System.getProperty("java.io.tmpdir"), "never-written-" + backend.rank());
            assertThatThrownBy(() -> Checkpoints.save(file, model, sharded, position))
                    .hasMessageContaining("call Checkpoints.saveSharded on every rank");
            Optimizer unsharded = backend.distribute(DistributeRequest.of(
                            (Module) model, ZeroTraining.optimizer("sgd", model.parameters()), null, null))
                    .optimizer();
            assertThatThrownBy(() -> Checkpoints.saveSharded(file, model, unsharded, position))
                    .hasMessageContaining("saveSharded is for an optimizer distributed with option zeroStage");
            assertThat(file).doesNotExist();
            return null;
        });
    }

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void inProcessesStageTwoOnGlooSavesAndStageOneOnShmResumesOnThreeRanks() throws Exception {
        boolean shm = ProcessRanks.shmAvailable();
        Path checkpoint = tmp.resolve("ckpt.pt");
        List<Result> saved = workers(2, "gloo", "2", checkpoint, "save");
        List<Result> resumed = workers(3, shm ? "shm" : "gloo", "1", checkpoint, "resume");
        float[] reference = ZeroTraining.single("adamw", true, STEPS);
        ProcessRanks.assertAllExitedZero(saved);
        ProcessRanks.assertAllExitedZero(resumed);
        for (int r = 0; r < 3; r++) {
            float[] w = EquivalenceTest.parse(Files.readString(tmp.resolve("resume-rank-" + r + ".txt")));
            assertThat(TinyTraining.maxRelativeDifference(w, reference)).isLessThan(1e-5);
        }
        float[] straight = EquivalenceTest.parse(Files.readString(tmp.resolve("save-rank-0.txt")));
        assertThat(TinyTraining.maxRelativeDifference(straight, reference)).isLessThan(1e-5);
    }

    private List<Result> workers(int world, String engine, String stage, Path checkpoint, String mode)
            throws Exception {
        return ProcessRanks.run(
                world,
                ZeroWorker.class,
                List.of(tmp.toString(), engine, stage, checkpoint.toString(), mode),
                "zero-" + mode,
                tmp.resolve("logs-" + mode),
                Duration.ofSeconds(100));
    }
}
