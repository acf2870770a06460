package dev.cohort.djl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Shards: disjoint, covering, the same number per rank, reshuffled per epoch alike on every rank. */
class DistributedSamplerTest {

    private static List<List<Long>> shards(int ranks, long size, int epoch, boolean shuffle, boolean pad) {
        List<List<Long>> all = new ArrayList<>();
        for (int r = 0; r < ranks; r++) {
            all.add(new DistributedSampler(r, ranks, 4, shuffle, 7, pad, false).shard(size, epoch));
        }
        return all;
    }

    @Test
    void shardsAreDisjointAndCoverTheDataset() {
        for (int ranks = 1; ranks <= 4; ranks++) {
            List<List<Long>> all = shards(ranks, 120, 0, true, true); // 120: a multiple of 1..4, no padding
            Set<Long> seen = new HashSet<>();
            for (List<Long> shard : all) {
                assertThat(shard).hasSize(120 / ranks);
                for (long i : shard) {
                    assertThat(seen.add(i))
                            .as("index %d twice with %d ranks", i, ranks)
                            .isTrue();
                }
            }
            assertThat(seen).hasSize(120);
        }
    }

    @Test
    void unevenSizesArePaddedOrCutSoEveryRankRunsAlike() {
        List<List<Long>> padded = shards(3, 10, 0, false, true);
        assertThat(padded).allSatisfy(s -> assertThat(s).hasSize(4));
        assertThat(padded.get(0)).containsExactly(0L, 3L, 6L, 9L);
        assertThat(padded.get(1)).containsExactly(1L, 4L, 7L, 0L); // padded with the first indices
        List<List<Long>> cut = shards(3, 10, 0, false, false);
        assertThat(cut).allSatisfy(s -> assertThat(s).hasSize(3));
        assertThat(cut.get(0)).containsExactly(0L, 3L, 6L);
    }

    /**
     * Three ranks train 5 batches of 4 of an epoch of 120, then a re-formed group of two goes on
     * after those 60 examples: every example of the epoch is trained once.
     */
    @Test
    void theRestOfAnEpochAfterAReformCoversWhatTheBiggerGroupLeft() {
        Set<Long> seen = new HashSet<>();
        for (int r = 0; r < 3; r++) {
            java.util.Iterator<List<Long>> batches = new DistributedSampler(r, 3, 4, true, 7, true, false).batches(120);
            for (int b = 0; b < 5; b++) {
                for (long i : batches.next()) {
                    assertThat(seen.add(i)).as("index %d twice", i).isTrue();
                }
            }
        }
        for (int r = 0; r < 2; r++) {
            DistributedSampler sampler = new DistributedSampler(r, 2, 4, true, 7, true, false);
            sampler.startAfter(0, 60);
            List<List<Long>> rest = new ArrayList<>();
            sampler.batches(120).forEachRemaining(rest::add);
            assertThat(rest).hasSize(8); // 30 examples a rank
            for (List<Long> batch : rest) {
                for (long i : batch) {
                    assertThat(seen.add(i)).as("index %d twice", i).isTrue();
                }
            }
            assertThat(sampler.epoch()).isEqualTo(1);
        }
        assertThat(seen).hasSize(120);
    }

    @Test
    void everyEpochReshufflesAndEveryRankAgrees() {
        List<List<Long>> first = shards(2, 100, 0, true, true);
        List<List<Long>> again = shards(2, 100, 0, true, true);
        List<List<Long>> next = shards(2, 100, 1, true, true);
        assertThat(again).isEqualTo(first);
        assertThat(next).isNotEqualTo(first);
        assertThat(first.get(0)).isNotEqualTo(shards(2, 100, 0, false, true).get(0));
    }

    @Test
    void batchesFollowTheShardAndDropTheShortOneOnlyWhenAsked() {
        DistributedSampler kept = new DistributedSampler(0, 2, 4, false, 0, true, false);
        DistributedSampler dropped = new DistributedSampler(0, 2, 4, false, 0, true, true);
        List<List<Long>> batches = new ArrayList<>();
        kept.batches(20).forEachRemaining(batches::add);
        assertThat(batches).containsExactly(List.of(0L, 2L, 4L, 6L), List.of(8L, 10L, 12L, 14L), List.of(16L, 18L));
        List<List<Long>> full = new ArrayList<>();
        dropped.batches(20).forEachRemaining(full::add);
        assertThat(full).hasSize(2);
        assertThat(kept.epoch()).isEqualTo(1);
        assertThatThrownBy(() -> new DistributedSampler(0, 1, 0, false, 0, true, false))
                .hasMessageContaining("batch size must be >= 1");
    }
}
