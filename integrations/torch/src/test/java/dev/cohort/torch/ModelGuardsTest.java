package dev.cohort.torch;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.api.DistributeRequest;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.DivergenceCheck.ModelsDivergedException;
import dev.cohort.libtorch.LibTorch;
import dev.cohort.runtime.threads.ThreadsBackend;
import dev.cohort.runtime.threads.ThreadsWorld;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Optimizer;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What keeps ranks from training different models without a word: stepping the optimizer passed
 * to {@code distribute()} fails at the next backward pass, the divergence check names the step and
 * the parameter where ranks differ, and {@link TorchTraining} hands back typed parts.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ModelGuardsTest {

    @BeforeAll
    static void load() {
        LibTorch.load();
        torch.set_num_threads(1);
    }

    private static <R> List<R> onRanks(Function<DistributedBackend, R> body) {
        return ThreadRanks.run(2, Duration.ofSeconds(50), body);
    }

    /** This rank's {@link TinyTraining.Net} (its own start) with SGD, through the typed distribute(). */
    private static TorchTraining<TinyTraining.Net, Object, Object> distributedNet(DistributedBackend backend) {
        TinyTraining.Net net = new TinyTraining.Net(backend.rank());
        return TorchTraining.distribute(backend, net, TinyTraining.sgd(net), null);
    }

    private static Tensor loss(TinyTraining.Net net, MiniBatch b) {
        return torch.cross_entropy(net.forward(b.inputs()), b.targets());
    }

    /** Rank r's half of step s's global batch. */
    private static MiniBatch shard(DistributedBackend backend, int s) {
        int half = TinyTraining.GLOBAL_BATCH / 2;
        return TinyTraining.batch(s, backend.rank() * half, half);
    }

    /** Asserts that each rank's failure begins with {@code start} and says each of {@code says}. */
    private static void assertEveryRankFailed(List<String> failures, String start, String... says) {
        assertThat(failures).allSatisfy(f -> assertThat(f).startsWith(start).contains(says));
    }

    @Test
    void steppingTheOptimizerPassedToDistributeFailsAtTheNextBackwardPass() {
        List<String> failures = onRanks(backend -> {
            TinyTraining.Net net = new TinyTraining.Net(backend.rank());
            Optimizer sgd = TinyTraining.sgd(net);
            backend.distribute(DistributeRequest.of(net, sgd, null, null)); // the result dropped, as in an old loop
            for (int s = 0; s < 3; s++) {
                sgd.zero_grad();
                try {
                    loss(net, shard(backend, s)).backward();
                } catch (RuntimeException e) {
                    return "step " + s + ": " + e.getMessage();
                }
                sgd.step();
            }
            return "no failure";
        });
        assertEveryRankFailed(
                failures,
                "step 1: ",
                "stepped the optimizer it passed to distribute()",
                "Step the optimizer distribute() returned");
    }

    @Test
    void accumulationAndChangesInsideNoSyncPassTheGuard() {
        List<float[]> weights = onRanks(backend -> {
            TorchTraining<TinyTraining.Net, Object, Object> t = distributedNet(backend);
            for (int s = 0; s < 3; s++) {
                t.optimizer().zero_grad();
                try (var unsynced = t.optimizer().noSync()) {
                    loss(t.model(), shard(backend, s)).backward();
                    try (NoGradGuard noGrad = new NoGradGuard()) {
                        t.model().fc2.bias().add_(torch.ones_like(t.model().fc2.bias())); // a change between passes
                    }
                }
                loss(t.model(), shard(backend, s)).backward();
                loss(t.model(), shard(backend, s + 1)).backward(); // accumulation without noSync
                t.optimizer().step();
            }
            return TinyTraining.weights(t.model());
        });
        assertThat(weights.get(1)).containsExactly(weights.get(0));
    }

    @Test
    void hooksOutliveTheOptimizerThatRegisteredThem() {
        // An elastic re-form distributes the model again; the first optimizer's hooks stay on the
        // parameters after it is gone, and the garbage collector must not free them under libtorch.
        // Outside any PointerScope, as a training program distributes: a scope would hold the hooks itself.
        List<float[]> weights = new ThreadsWorld(2, 2, Duration.ofSeconds(30))
                .runAll(
                        rank -> {
                            try (ThreadsBackend backend = new ThreadsBackend()) {
                                backend.initialize();
                                return trainOnAfterADistributedAgain(backend);
                            }
                        },
                        Duration.ofSeconds(50));
        assertThat(weights.get(1)).containsExactly(weights.get(0));
    }

    private static float[] trainOnAfterADistributedAgain(DistributedBackend backend) {
        {
            TinyTraining.Net net = new TinyTraining.Net(backend.rank());
            Optimizer sgd = TinyTraining.sgd(net);
            DistributedOptimizer first = TorchTraining.distribute(
                            backend,
                            DistributeRequest.of(net, sgd, (ShardedLoader) null, null)
                                    .withOption(TorchDistributor.OVERLAP, true))
                    .optimizer();
            TinyTraining.step(net, first, shard(backend, 0));
            first.release();
            first = null;
            TorchTraining<TinyTraining.Net, Object, Object> t = TorchTraining.distribute(backend, net, sgd, null);
            System.gc();
            org.bytedeco.javacpp.Pointer.deallocateReferences();
            for (int s = 1; s < 4; s++) {
                TinyTraining.step(t.model(), t.optimizer(), shard(backend, s));
            }
            return TinyTraining.weights(t.model());
        }
    }

    @Test
    void ranksWhoseModelsDifferFailTheCheckNamingTheStepAndTheParameter() {
        List<String> failures = onRanks(backend -> {
            TinyTraining.Net net = new TinyTraining.Net(backend.rank());
            TorchTraining<TinyTraining.Net, ShardedLoader, Object> t = TorchTraining.distribute(
                    backend,
                    DistributeRequest.of(net, TinyTraining.sgd(net), (ShardedLoader) null, null)
                            .withOption(TorchDistributor.DIVERGENCE_CHECK, 2));
            for (int s = 1; s <= 4; s++) {
                t.optimizer().zero_grad();
                loss(t.model(), shard(backend, s)).backward();
                try {
                    t.optimizer().step();
                } catch (ModelsDivergedException e) {
                    return e.step() + " " + e.parameter() + ": " + e.getMessage();
                }
                if (s == 2 && backend.rank() == 1) {
                    try (NoGradGuard noGrad = new NoGradGuard()) {
                        t.model().fc1.weight().mul_(new org.bytedeco.pytorch.Scalar(1.0001)); // rank-dependent code
                    }
                }
            }
            return "no failure";
        });
        assertEveryRankFailed(failures, "4 fc1.weight: ", "differ at step 4 (they were the same at step 2)");
    }

    @Test
    void typedPartsTrainAsTheUntypedOnesDo() {
        List<float[]> typed = onRanks(backend -> {
            TorchTraining<TinyTraining.Net, Object, Object> t = distributedNet(backend);
            TinyTraining.Net model = t.model();
            DistributedOptimizer optimizer = t.optimizer();
            for (int s = 0; s < TinyTraining.STEPS; s++) {
                optimizer.zero_grad();
                loss(model, shard(backend, s)).backward();
                optimizer.step();
            }
            return TinyTraining.weights(model);
        });
        float[] single = TinyTraining.single();
        for (float[] w : typed) {
            for (int i = 0; i < w.length; i++) {
                assertThat((double) w[i])
                        .isCloseTo(
                                single[i],
                                org.assertj.core.data.Offset.offset(1e-5 * Math.max(1, Math.abs(single[i]))));
            }
        }
    }
}
