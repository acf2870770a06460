package dev.cohort.torch;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.libtorch.LibTorch;
import dev.cohort.runtime.threads.ThreadsBackend;
import dev.cohort.runtime.threads.ThreadsWorld;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 30, unit = TimeUnit.SECONDS)
class ShardedLoaderTest {

    @BeforeAll
    static void load() {
        LibTorch.load();
    }

    @Test
    void shardsAreDisjointEqualAndPaddedFromTheStart() {
        int n = 3;
        long size = 10;
        Set<Long> seen = new HashSet<>();
        List<long[]> shards = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            long[] mine = new ShardSampler(size, n, r, true, 7, false).indices(2);
            assertThat(mine).hasSize(4); // ceil(10 / 3)
            shards.add(mine);
            for (long i : mine) {
                seen.add(i);
            }
        }
        assertThat(seen).hasSize(10); // everything covered
        long[] all = ShuffledSampler.permutation(size, true, 7, 2);
        assertThat(shards.get(0)[0]).isEqualTo(all[0]);
        assertThat(shards.get(1)[3]).isEqualTo(all[0]); // position 10 wraps to the start
        assertThat(shards.get(2)[3]).isEqualTo(all[1]);
    }

    @Test
    void anEpochGoesOnOnFewerWorkersWithTheExamplesNotYetTrainedOn() {
        long size = 100;
        int batch = 4;
        // 3 workers train 5 global steps of 4 each (60 examples), then 2 workers take the rest.
        List<Long> trained = new ArrayList<>();
        for (int r = 0; r < 3; r++) {
            long[] mine = new ShardSampler(size, 3, r, true, 9, false).indices(1);
            for (int k = 0; k < 5 * batch; k++) {
                trained.add(mine[k]);
            }
        }
        List<Long> rest = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            ShardSampler s = new ShardSampler(size, 2, r, true, 9, false, 60);
            assertThat(s.length()).isEqualTo(20);
            for (long i : s.indices(1)) {
                rest.add(i);
            }
        }
        assertThat(trained).doesNotHaveDuplicates().doesNotContainAnyElementsOf(rest);
        assertThat(rest).doesNotHaveDuplicates();
        Set<Long> all = new HashSet<>(trained);
        all.addAll(rest);
        assertThat(all).hasSize(100);
        assertThat(new ShardSampler(size, 2, 0, true, 9, false, 100).length()).isZero();
        Tensor hundred = torch.arange(new org.bytedeco.pytorch.Scalar(100));
        assertThat(ShardedLoader.of(new TensorSamples(hundred, hundred), 4, true, 9)
                        .sharded(3, 1, false, 91)
                        .batchesPerEpoch())
                .as("9 examples left over 3 workers, batches of 4")
                .isEqualTo(1);
    }

    @Test
    void dropLastCutsToAMultipleOfTheWorld() {
        assertThat(new ShardSampler(10, 3, 0, false, 0, true).indices(0)).containsExactly(0, 3, 6);
        assertThat(new ShardSampler(10, 3, 2, false, 0, true).indices(0)).containsExactly(2, 5, 8);
    }

    @Test
    void everyEpochIsReshuffledTheSameWayOnEveryRank() {
        ShardSampler a = new ShardSampler(100, 2, 0, true, 1, false);
        ShardSampler b = new ShardSampler(100, 2, 0, true, 1, false);
        assertThat(a.indices(0)).isEqualTo(b.indices(0));
        assertThat(a.indices(0)).isNotEqualTo(a.indices(1));
    }

    @Test
    void distributeShardsTheLoaderAndBatchesResumeMidEpoch() {
        Tensor x = torch.arange(new org.bytedeco.pytorch.Scalar(20)).reshape(20, 1);
        TensorSamples data = new TensorSamples(x, torch.zeros(20));
        ShardedLoader loader = ShardedLoader.of(data, 3, true, 5);
        List<List<Long>> perRank = ThreadsWorld.run(2, rank -> {
            try (ThreadsBackend backend = new ThreadsBackend()) {
                backend.initialize();
                ShardedLoader shard = backend.distribute(dev.cohort.api.DistributeRequest.of(null, null, loader, null))
                        .trainingData();
                assertThat(shard.batchesPerEpoch()).isEqualTo(4); // 10 examples, batches of 3
                List<Long> seen = new ArrayList<>();
                for (MiniBatch b : shard.epoch(1)) {
                    for (long i = 0; i < b.size(); i++) {
                        seen.add(b.inputs().get(i).get(0).item_long());
                    }
                }
                List<Long> tail = new ArrayList<>();
                for (MiniBatch b : shard.epoch(1, 2)) {
                    for (long i = 0; i < b.size(); i++) {
                        tail.add(b.inputs().get(i).get(0).item_long());
                    }
                }
                assertThat(tail).isEqualTo(seen.subList(6, seen.size()));
                return seen;
            }
        });
        Set<Long> union = new HashSet<>(perRank.get(0));
        union.addAll(perRank.get(1));
        assertThat(union).hasSize(20);
        assertThat(perRank.get(0)).doesNotContainAnyElementsOf(perRank.get(1));
        assertThat(Arrays.asList(loader.batchesPerEpoch())).containsExactly(7);
    }

    @Test
    void averageAllOnTensorsLeavesTheInputAlone() {
        List<float[]> results = ThreadsWorld.run(3, rank -> {
            try (ThreadsBackend backend = new ThreadsBackend()) {
                backend.initialize();
                Tensor t = torch.full(new long[] {2}, new org.bytedeco.pytorch.Scalar((float) rank));
                Tensor mean = TorchCollectives.averageAll(backend, t);
                assertThat(t.get(0).item_float()).isEqualTo(rank);
                return new float[] {mean.get(0).item_float(), mean.get(1).item_float()};
            }
        });
        assertThat(results).allSatisfy(r -> assertThat(r).containsExactly(1f, 1f));
    }
}
