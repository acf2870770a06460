package dev.cohort.torch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.cohort.api.DistributeRequest;
import dev.cohort.api.DistributedBackend;
import dev.cohort.libtorch.LibTorch;
import java.time.Duration;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.bytedeco.pytorch.Adam;
import org.bytedeco.pytorch.AdamOptions;
import org.bytedeco.pytorch.BatchNorm1dImpl;
import org.bytedeco.pytorch.LinearImpl;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Optimizer;
import org.bytedeco.pytorch.SGD;
import org.bytedeco.pytorch.SGDOptions;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What a training loop controls beyond backward and step, each against one process on the whole
 * batch (within 1e-5 relative): clipping the averaged gradients, training some parameters only,
 * the root's optimizer state reaching every rank, parameters some or all ranks leave unused, the
 * model's buffers, and the refusals of what the integration cannot honour.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TrainingControlsTest {

    private static final double MAX_NORM = 0.3;

    @BeforeAll
    static void load() {
        LibTorch.load();
        torch.set_num_threads(1);
    }

    /** Runs {@code body} on every rank of a threads-engine world of {@code world}. */
    private static <R> List<R> onRanks(int world, Function<DistributedBackend, R> body) {
        return ThreadRanks.run(world, Duration.ofSeconds(50), body);
    }

    private static Tensor loss(TinyTraining.Net net, MiniBatch b) {
        return torch.cross_entropy(net.forward(b.inputs()), b.targets());
    }

    @ParameterizedTest(name = "world {0}")
    @ValueSource(ints = {1, 2, 3})
    void clippingTheAveragedGradientsEqualsClippingOnOneProcess(int world) {
        TinyTraining.Net single = new TinyTraining.Net(0);
        Optimizer sgd = TinyTraining.sgd(single);
        double[] norms = new double[TinyTraining.STEPS];
        for (int s = 0; s < TinyTraining.STEPS; s++) {
            sgd.zero_grad();
            loss(single, TinyTraining.batch(s, 0, TinyTraining.GLOBAL_BATCH)).backward();
            norms[s] = torch.clip_grad_norm_(single.parameters(), MAX_NORM, 2.0, false);
            sgd.step();
        }
        assertThat(java.util.Arrays.stream(norms).max().orElseThrow())
                .as("the norm must exceed the bound for the clip " + "to matter")
                .isGreaterThan(MAX_NORM);
        float[] reference = TinyTraining.weights(single);

        int shard = TinyTraining.GLOBAL_BATCH / world;
        List<double[]> seen = onRanks(world, backend -> {
            TinyTraining.Net net = new TinyTraining.Net(backend.rank());
            DistributedOptimizer optimizer = (DistributedOptimizer)
                    backend.distribute(DistributeRequest.of((Module) net, TinyTraining.sgd(net), null, null))
                            .optimizer();
            double[] mine = new double[TinyTraining.STEPS];
            for (int s = 0; s < TinyTraining.STEPS; s++) {
                optimizer.zero_grad();
                loss(net, TinyTraining.batch(s, backend.rank() * shard, shard)).backward();
                mine[s] = optimizer.clipGradNorm(MAX_NORM);
                optimizer.step();
            }
            assertThat(TinyTraining.maxRelativeDifference(TinyTraining.weights(net), reference))
                    .isLessThan(1e-5);
            return mine;
        });
        for (double[] mine : seen) {
            for (int s = 0; s < norms.length; s++) {
                assertThat(mine[s]).isCloseTo(norms[s], org.assertj.core.data.Percentage.withPercentage(1e-3));
            }
        }
    }

    @Test
    void aBackwardBetweenSynchronizeAndStepIsRefused() {
        List<String> messages = onRanks(2, backend -> {
            TinyTraining.Net net = new TinyTraining.Net(backend.rank());
            DistributedOptimizer optimizer = (DistributedOptimizer)
                    backend.distribute(DistributeRequest.of((Module) net, TinyTraining.sgd(net), null, null)
                                    .withOption(TorchDistributor.OVERLAP, true))
                            .optimizer();
            optimizer.zero_grad();
            loss(net, TinyTraining.batch(0, backend.rank() * 6, 6)).backward();
            optimizer.synchronize();
            optimizer.synchronize(); // a second call averages nothing more
            loss(net, TinyTraining.batch(1, backend.rank() * 6, 6)).backward();
            try {
                optimizer.step();
                return "stepped";
            } catch (IllegalStateException e) {
                return e.getMessage();
            }
        });
        assertThat(messages).allMatch(m -> m.contains("backward ran after synchronize()"), "refused on every rank");
    }

    @Test
    void onlyTheModelParametersNamedAreTrained() {
        // One process trains fc2 only; the ranks name fc2's tensors as the parameters to train.
        TinyTraining.Net single = new TinyTraining.Net(0);
        float[] fc1Before = TinyTraining.weights(vector(single.fc1.weight(), single.fc1.bias()));
        Optimizer fc2Only = sgd(vector(single.fc2.weight(), single.fc2.bias()));
        for (int s = 0; s < TinyTraining.STEPS; s++) {
            fc2Only.zero_grad();
            loss(single, TinyTraining.batch(s, 0, TinyTraining.GLOBAL_BATCH)).backward();
            fc2Only.step();
        }
        float[] reference = TinyTraining.weights(single);
        onRanks(2, backend -> {
            TinyTraining.Net net = new TinyTraining.Net(backend.rank());
            List<Tensor> trained = List.of(net.fc2.weight(), net.fc2.bias());
            DistributedOptimizer optimizer = (DistributedOptimizer) backend.distribute(DistributeRequest.of(
                                    (Module) net, sgd(vector(net.fc2.weight(), net.fc2.bias())), null, null)
                            .withModelParameters(trained))
                    .optimizer();
            assertThat(optimizer.buckets().parameterOrder()).hasSize(2); // fc1 has no bucket
            for (int s = 0; s < TinyTraining.STEPS; s++) {
                optimizer.zero_grad();
                loss(net, TinyTraining.batch(s, backend.rank() * 6, 6)).backward();
                optimizer.step();
            }
            assertThat(TinyTraining.maxRelativeDifference(TinyTraining.weights(net), reference))
                    .isLessThan(1e-5);
            // fc1 is the root's, broadcast, and never stepped.
            assertThat(TinyTraining.weights(vector(net.fc1.weight(), net.fc1.bias())))
                    .containsExactly(fc1Before);
            return null;
        });
    }

    @Test
    void whatTheIntegrationCannotHonourIsRefusedWithWhatToDo() {
        onRanks(1, backend -> {
            TinyTraining.Net net = new TinyTraining.Net(0);
            assertThatThrownBy(() ->
                            backend.distribute(DistributeRequest.of((Module) net, TinyTraining.sgd(net), null, null)
                                    .withModelParameters(List.of(net.fc2.weight(), net.fc2.bias()))))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("the optimizer updates 2 parameter(s)")
                    .hasMessageContaining("list them in modelParameters");
            assertThatThrownBy(() ->
                            backend.distribute(DistributeRequest.of((Module) net, TinyTraining.sgd(net), null, null)
                                    .withModelParameters("fc2")))
                    .hasMessageContaining("modelParameters must be a TensorVector");
            assertThatThrownBy(
                            () -> backend.distribute(DistributeRequest.of((Module) net, null, List.of(1, 2, 3), null)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("would reach every rank whole")
                    .hasMessageContaining("ShardedLoader.of(");
            assertThatThrownBy(() -> backend.distribute(
                            DistributeRequest.of((Module) net, null, null, null).withOption("bucketbytes", 1024)))
                    .hasMessageContaining("unknown option 'bucketbytes'")
                    .hasMessageContaining(TorchDistributor.BUCKET_BYTES);
            assertThatThrownBy(() -> backend.distribute(DistributeRequest.of((Module) net, null, null, null)
                            .withOption(TorchDistributor.OVERLAP, "yes")))
                    .hasMessageContaining("option 'overlap' must be a Boolean, got String yes");
            return null;
        });
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"sgd with momentum", "adam"})
    void theRootsOptimizerStateReachesEveryRank(String kind) {
        // The root has trained three steps alone before distribute (its optimizer holds momentum or
        // moments); the others start fresh. All continue exactly as the root would alone.
        TinyTraining.Net single = new TinyTraining.Net(0);
        Optimizer alone = optimizer(kind, single.parameters());
        for (int s = 0; s < 3; s++) {
            TinyTraining.step(single, alone, TinyTraining.batch(100 + s, 0, TinyTraining.GLOBAL_BATCH));
        }
        TinyTraining.trainSingle(single, alone, 0, TinyTraining.STEPS);
        float[] reference = TinyTraining.weights(single);
        onRanks(3, backend -> {
            TinyTraining.Net net = new TinyTraining.Net(backend.rank());
            Optimizer local = optimizer(kind, net.parameters());
            if (backend.isRootWorker()) {
                for (int s = 0; s < 3; s++) {
                    TinyTraining.step(net, local, TinyTraining.batch(100 + s, 0, TinyTraining.GLOBAL_BATCH));
                }
            }
            Optimizer optimizer = backend.distribute(DistributeRequest.of((Module) net, local, null, null))
                    .optimizer();
            for (int s = 0; s < TinyTraining.STEPS; s++) {
                TinyTraining.step(net, optimizer, TinyTraining.batch(s, backend.rank() * 4, 4));
            }
            assertThat(TinyTraining.maxRelativeDifference(TinyTraining.weights(net), reference))
                    .isLessThan(1e-5);
            return null;
        });
    }

    @ParameterizedTest(name = "overlap {0}")
    @ValueSource(booleans = {true, false})
    void byDefaultAParameterARankLeftUnusedCountsAsZerosInTheAverage(boolean overlap) {
        // By default the extra layer's gradient counts as zeros where a rank left it unused, and where
        // no rank used it the ranks still step it with a zero gradient (momentum goes on).
        ranksWithExtraMatch(singleWithExtra(true), overlap, false);
    }

    @ParameterizedTest(name = "overlap {0}")
    @ValueSource(booleans = {true, false})
    void parametersNoRankUsedKeepNoGradientAsOnOneProcess(boolean overlap) {
        // In odd steps no rank uses the extra layer, and one process skips it (no gradient, so no
        // momentum step) as the ranks must.
        ranksWithExtraMatch(singleWithExtra(false), overlap, true);
    }

    /**
     * One process on the whole batch of {@link WithExtra}, whose extra layer runs for rank 0's half
     * in even steps only; {@code zerosWhereUnused}: the other passes contribute zero gradients to it.
     */
    private static float[] singleWithExtra(boolean zerosWhereUnused) {
        WithExtra single = new WithExtra(0);
        Optimizer sgd = TinyTraining.sgd(single);
        for (int s = 0; s < TinyTraining.STEPS; s++) {
            sgd.zero_grad();
            Tensor total = null;
            for (int r = 0; r < 2; r++) {
                boolean used = r == 0 && s % 2 == 0;
                MiniBatch half = TinyTraining.batch(s, r * 6, 6);
                Tensor l = single.loss(half, used).div(new Scalar(2.0));
                if (!used && zerosWhereUnused) {
                    l = l.add(single.extra.forward(half.inputs()).sum().mul(new Scalar(0.0)));
                }
                total = total == null ? l : total.add(l);
            }
            total.backward();
            sgd.step();
        }
        return TinyTraining.weights(single.parameters());
    }

    /** Two ranks, the extra layer used on rank 0 in even steps only, end with {@code reference}'s weights. */
    private static void ranksWithExtraMatch(float[] reference, boolean overlap, boolean findUnused) {
        onRanks(2, backend -> {
            WithExtra net = new WithExtra(backend.rank());
            Optimizer optimizer = backend.distribute(
                            DistributeRequest.of((Module) net, TinyTraining.sgd(net), null, null)
                                    .withOption(TorchDistributor.FIND_UNUSED_PARAMETERS, findUnused)
                                    .withOption(TorchDistributor.OVERLAP, overlap)
                                    .withOption(TorchDistributor.BUCKET_BYTES, 64L))
                    .optimizer();
            for (int s = 0; s < TinyTraining.STEPS; s++) {
                optimizer.zero_grad();
                net.loss(TinyTraining.batch(s, backend.rank() * 6, 6), backend.rank() == 0 && s % 2 == 0)
                        .backward();
                optimizer.step();
            }
            assertThat(TinyTraining.maxRelativeDifference(TinyTraining.weights(net.parameters()), reference))
                    .isLessThan(1e-5);
            return null;
        });
    }

    @Test
    void everyRankHoldsTheRootsBuffersAfterEachStepUnlessTurnedOff() {
        for (boolean broadcast : new boolean[] {true, false}) {
            List<float[]> buffers = onRanks(2, backend -> {
                WithBatchNorm net = new WithBatchNorm(backend.rank());
                Optimizer optimizer = backend.distribute(
                                DistributeRequest.of((Module) net, TinyTraining.sgd(net), null, null)
                                        .withOption(TorchDistributor.BROADCAST_BUFFERS, broadcast))
                        .optimizer();
                for (int s = 0; s < 3; s++) {
                    optimizer.zero_grad();
                    torch.cross_entropy(
                                    net.forward(TinyTraining.batch(s, backend.rank() * 6, 6)
                                            .inputs()),
                                    TinyTraining.batch(s, backend.rank() * 6, 6).targets())
                            .backward();
                    optimizer.step();
                }
                float[] running = TinyTraining.weights(vector(net.bn.running_mean(), net.bn.running_var()));
                assertThat(net.bn.num_batches_tracked().item_long()).isEqualTo(3);
                return running;
            });
            if (broadcast) {
                assertThat(buffers.get(1)).containsExactly(buffers.get(0));
            } else {
                assertThat(buffers.get(1)).isNotEqualTo(buffers.get(0)); // each rank's statistics of its own shard
            }
        }
    }

    @ParameterizedTest(name = "world {0}")
    @ValueSource(ints = {1, 2, 3})
    void syncBatchNormOnShardsEqualsBatchNormOnTheWholeBatch(int world) {
        WithBatchNorm single = new WithBatchNorm(0);
        Optimizer sgd = TinyTraining.sgd(single);
        for (int s = 0; s < TinyTraining.STEPS; s++) {
            sgd.zero_grad();
            MiniBatch b = TinyTraining.batch(s, 0, TinyTraining.GLOBAL_BATCH);
            torch.cross_entropy(single.forward(b.inputs()), b.targets()).backward();
            sgd.step();
        }
        float[] reference = TinyTraining.weights(single.parameters());
        float[] referenceStats = TinyTraining.weights(vector(single.bn.running_mean(), single.bn.running_var()));
        single.eval();
        float[] referenceOutput = TinyTraining.weights(
                vector(single.forward(TinyTraining.batch(99, 0, 5).inputs()).detach()));

        int shard = TinyTraining.GLOBAL_BATCH / world;
        onRanks(world, backend -> {
            WithSyncBatchNorm net = new WithSyncBatchNorm(backend, backend.rank());
            Optimizer optimizer = backend.distribute(
                            DistributeRequest.of((Module) net, TinyTraining.sgd(net), null, null))
                    .optimizer();
            for (int s = 0; s < TinyTraining.STEPS; s++) {
                optimizer.zero_grad();
                MiniBatch b = TinyTraining.batch(s, backend.rank() * shard, shard);
                torch.cross_entropy(net.forward(b.inputs()), b.targets()).backward();
                optimizer.step();
            }
            assertThat(TinyTraining.maxRelativeDifference(TinyTraining.weights(net.parameters()), reference))
                    .isLessThan(1e-5);
            TensorVector buffers = net.bn.buffers();
            assertThat(TinyTraining.maxRelativeDifference(
                            TinyTraining.weights(vector(buffers.get(0), buffers.get(1))), referenceStats))
                    .isLessThan(1e-5);
            assertThat(buffers.get(2).item_long()).isEqualTo(TinyTraining.STEPS);
            net.eval(); // running statistics, no communication
            float[] output = TinyTraining.weights(
                    vector(net.forward(TinyTraining.batch(99, 0, 5).inputs()).detach()));
            assertThat(TinyTraining.maxRelativeDifference(output, referenceOutput))
                    .isLessThan(1e-5);
            return null;
        });
    }

    @Test
    void syncBatchNormRefusesAnInputOfAnotherShape() {
        onRanks(1, backend -> {
            SyncBatchNorm bn = new SyncBatchNorm(backend.group(), 4);
            assertThatThrownBy(() -> bn.forward(torch.zeros(3, 5)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("[N, 4, ...], got [3, 5]");
            assertThatThrownBy(() -> bn.forward(torch.zeros(1, 4)))
                    .hasMessageContaining("more than one value per channel");
            return null;
        });
    }

    @ParameterizedTest(name = "{0}, overlap {1}")
    @org.junit.jupiter.params.provider.CsvSource({"bf16, true", "fp16, false"})
    void compressedGradientsAreTheAverageAtSixteenBitPrecisionInHalfTheBytes(String kind, boolean overlap) {
        TinyTraining.Net single = new TinyTraining.Net(0);
        single.zero_grad(true);
        loss(single, TinyTraining.batch(0, 0, TinyTraining.GLOBAL_BATCH)).backward();
        float[] reference = gradients(single);
        // 16-bit precision against the gradients' scale: 8 significant bits for bfloat16, 11 for
        // float16, a few roundings (each rank's half of a sum that may cancel, and the sum).
        double bound = (kind.equals("bf16") ? 8.0 / 256 : 8.0 / 2048) * maxAbs(reference);
        List<long[]> bytes = onRanks(2, backend -> {
            TinyTraining.Net net = new TinyTraining.Net(backend.rank());
            DistributedOptimizer optimizer = (DistributedOptimizer)
                    backend.distribute(DistributeRequest.of((Module) net, TinyTraining.sgd(net), null, null)
                                    .withOption(TorchDistributor.GRAD_COMPRESSION, kind)
                                    .withOption(TorchDistributor.OVERLAP, overlap)
                                    .withOption(TorchDistributor.BUCKET_BYTES, 256L))
                            .optimizer();
            optimizer.zero_grad();
            loss(net, TinyTraining.batch(0, backend.rank() * 6, 6)).backward();
            optimizer.synchronize();
            float[] averaged = gradients(net);
            double worst = 0;
            for (int i = 0; i < averaged.length; i++) {
                worst = Math.max(worst, Math.abs(averaged[i] - reference[i]));
            }
            assertThat(worst).isLessThan(bound).isGreaterThan(0); // rounded, not sent as float32
            return new long[] {optimizer.buckets().bytesPerStep(), 4L * averaged.length};
        });
        for (long[] b : bytes) {
            assertThat(b[0]).isEqualTo(b[1] / 2);
        }
        onRanks(1, backend -> {
            TinyTraining.Net net = new TinyTraining.Net(0);
            assertThatThrownBy(() ->
                            backend.distribute(DistributeRequest.of((Module) net, TinyTraining.sgd(net), null, null)
                                    .withOption(TorchDistributor.GRAD_COMPRESSION, "int8")))
                    .hasMessageContaining("must be bf16, fp16 or none, got int8");
            return null;
        });
    }

    private static double maxAbs(float[] values) {
        double max = 0;
        for (float v : values) {
            max = Math.max(max, Math.abs(v));
        }
        return max;
    }

    private static float[] gradients(TinyTraining.Net net) {
        TensorVector grads = new TensorVector();
        net.inUseOrder().forEach(p -> grads.push_back(p.grad()));
        return TinyTraining.weights(grads);
    }

    @Test
    void dropLastReachesTheShards() {
        TensorSamples data = new TensorSamples(torch.zeros(10, 1), torch.zeros(10));
        List<Long> lengths = onRanks(3, backend -> {
            ShardedLoader kept = backend.distribute(
                            DistributeRequest.of(null, null, ShardedLoader.of(data, 2, false, 0), null))
                    .trainingData();
            ShardedLoader cut = backend.distribute(
                            DistributeRequest.of(null, null, ShardedLoader.of(data, 2, false, 0), null)
                                    .withOption(TorchDistributor.DROP_LAST, true))
                    .trainingData();
            return kept.sampler().length() * 10 + cut.sampler().length();
        });
        assertThat(lengths).containsOnly(4L * 10 + 3); // padded to 12, or cut to 9
    }

    private static TensorVector vector(Tensor... tensors) {
        TensorVector v = new TensorVector();
        for (Tensor t : tensors) {
            v.push_back(t);
        }
        return v;
    }

    private static Optimizer sgd(TensorVector params) {
        SGDOptions options = new SGDOptions(0.1);
        options.momentum().put(0.9);
        return new SGD(params, options);
    }

    private static Optimizer optimizer(String kind, TensorVector params) {
        return kind.equals("adam") ? new Adam(params, new AdamOptions(0.01)) : sgd(params);
    }

    /** Seeded weights in [-0.5, 0.5) for every parameter of {@code m}. */
    private static void seed(Module m, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        TensorVector params = m.parameters();
        for (long i = 0; i < params.size(); i++) {
            var b = TensorBuffers.view(params.get(i));
            for (int k = 0; k < b.count(); k++) {
                b.setDouble(k, random.nextDouble(-0.5, 0.5));
            }
        }
    }

    /** The tiny MLP plus a layer that runs only when asked. */
    static final class WithExtra extends Module {
        final LinearImpl fc1 = register_module("fc1", new LinearImpl(8, 16));
        final LinearImpl fc2 = register_module("fc2", new LinearImpl(16, 3));
        final LinearImpl extra = register_module("extra", new LinearImpl(8, 3));

        WithExtra(long seed) {
            seed(this, seed);
        }

        Tensor loss(MiniBatch b, boolean useExtra) {
            Tensor out = fc2.forward(torch.relu(fc1.forward(b.inputs())));
            if (useExtra) {
                out = out.add(extra.forward(b.inputs()));
            }
            return torch.cross_entropy(out, b.targets());
        }
    }

    /** As {@link WithBatchNorm}, normalizing over every rank's shard together. */
    static final class WithSyncBatchNorm extends Module {
        final LinearImpl fc1 = register_module("fc1", new LinearImpl(8, 16));
        final SyncBatchNorm bn;
        final LinearImpl fc2;

        WithSyncBatchNorm(DistributedBackend backend, long seed) {
            bn = new SyncBatchNorm(backend.group(), 16);
            register_module("bn", bn);
            fc2 = register_module("fc2", new LinearImpl(16, 3));
            seed(this, seed);
        }

        Tensor forward(Tensor x) {
            return fc2.forward(torch.relu(bn.forward(fc1.forward(x))));
        }
    }

    /** The tiny MLP with a BatchNorm layer (running mean and variance, batches tracked). */
    static final class WithBatchNorm extends Module {
        final LinearImpl fc1 = register_module("fc1", new LinearImpl(8, 16));
        final BatchNorm1dImpl bn =
                register_module("bn", new BatchNorm1dImpl(new org.bytedeco.pytorch.BatchNormOptions(16)));
        final LinearImpl fc2 = register_module("fc2", new LinearImpl(16, 3));

        WithBatchNorm(long seed) {
            seed(this, seed);
        }

        Tensor forward(Tensor x) {
            return fc2.forward(torch.relu(bn.forward(fc1.forward(x))));
        }
    }
}
