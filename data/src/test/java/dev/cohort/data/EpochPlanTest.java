package dev.cohort.data;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class EpochPlanTest {

    /** One random case: a dataset's row groups, the options, two world sizes and a batch. */
    record Case(long[] rows, long seed, Remainder remainder, int buffer, int w1, int w2, int batch) {
        int examples() {
            return (int) Arrays.stream(rows).sum();
        }

        EpochPlan plan(DataPosition position, int world, int rank) {
            return EpochPlan.compute(rows, seed, remainder, buffer, position, world, rank);
        }
    }

    private static List<Case> cases(int count) {
        Random random = new Random(42);
        List<Case> cases = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            int files = 1 + random.nextInt(4);
            List<Long> rows = new ArrayList<>();
            for (int f = 0; f < files; f++) {
                int groups = 1 + random.nextInt(5);
                for (int g = 0; g < groups; g++) {
                    rows.add((long) random.nextInt(40)); // empty row groups too
                }
            }
            cases.add(new Case(
                    rows.stream().mapToLong(Long::longValue).toArray(),
                    random.nextLong(),
                    random.nextBoolean() ? Remainder.PAD : Remainder.DROP,
                    random.nextInt(3) == 0 ? 0 : random.nextInt(64),
                    1 + random.nextInt(5),
                    1 + random.nextInt(5),
                    1 + random.nextInt(9)));
        }
        return cases;
    }

    /** The ids rank {@code rank} hands out from the plan's start, at most {@code limit}. */
    private static int[] handedOut(EpochPlan plan, int limit) {
        int n = Math.min(limit, plan.perRank() - plan.consumed);
        int[] out = new int[n];
        for (int j = 0; j < n; j++) {
            out[j] = plan.input[plan.order[plan.consumed + j]];
        }
        return out;
    }

    @Test
    void everyRankRunsTheSameStepsAndAnEpochCoversTheDataAsTheRemainderRuleSays() {
        for (Case c : cases(300)) {
            int n = c.examples();
            int[] seen = new int[n];
            int steps = -1;
            for (int r = 0; r < c.w1(); r++) {
                EpochPlan plan = c.plan(DataPosition.start(3), c.w1(), r);
                assertThat(steps == -1 || plan.stepsLeft(c.batch()) == steps)
                        .as("%s", c)
                        .isTrue();
                steps = plan.stepsLeft(c.batch());
                for (int id : handedOut(plan, Integer.MAX_VALUE)) {
                    seen[id]++;
                }
            }
            int total = Arrays.stream(seen).sum();
            if (c.remainder() == Remainder.DROP) {
                assertThat(Arrays.stream(seen).max().orElse(0)).as("%s", c).isLessThanOrEqualTo(1);
                assertThat(total).as("%s", c).isEqualTo(n - n % c.w1());
            } else if (n > 0) {
                assertThat(Arrays.stream(seen).min().orElse(1)).as("%s", c).isGreaterThanOrEqualTo(1);
                assertThat(total).as("%s", c).isEqualTo(EpochPlan.perRank(n, c.w1(), Remainder.PAD) * c.w1());
            }
        }
    }

    @Test
    void aRunResumedFromAnyPositionSeesTheBatchesTheUninterruptedRunSees() {
        for (Case c : cases(200)) {
            for (int r = 0; r < c.w1(); r++) {
                EpochPlan whole = c.plan(DataPosition.start(1), c.w1(), r);
                int[] all = handedOut(whole, Integer.MAX_VALUE);
                for (int k = 0; k <= whole.stepsLeft(c.batch()); k++) {
                    int done = Math.min(all.length, k * c.batch());
                    DataPosition saved =
                            DataPosition.parse(whole.positionAt(done).toString());
                    EpochPlan resumed = c.plan(saved, c.w1(), r);
                    assertThat(resumed.stepsLeft(c.batch())).isEqualTo(whole.stepsLeft(c.batch()) - k);
                    assertThat(handedOut(resumed, Integer.MAX_VALUE))
                            .as("%s rank %d after %d steps", c, r, k)
                            .containsExactly(Arrays.copyOfRange(all, done, all.length));
                }
            }
        }
    }

    @Test
    void anElasticReformSplitsWhatIsLeftAmongTheNewRanksLosingNothing() {
        for (Case c : cases(300)) {
            int n = c.examples();
            DataPosition start = DataPosition.start(2);
            int steps1 = c.plan(start, c.w1(), 0).stepsLeft(c.batch());
            for (int k = 0; k <= steps1; k++) {
                int[] seen = new int[n];
                int duplicatesAllowed = 0;
                DataPosition after = null;
                for (int r = 0; r < c.w1(); r++) {
                    EpochPlan plan = c.plan(start, c.w1(), r);
                    int[] out = handedOut(plan, k * c.batch());
                    for (int id : out) {
                        seen[id]++;
                    }
                    after = plan.positionAt(out.length);
                    duplicatesAllowed = plan.perRank() * c.w1() - n;
                }
                int w2Steps = -1;
                int left = 0;
                for (int r = 0; r < c.w2(); r++) {
                    EpochPlan plan = c.plan(after, c.w2(), r);
                    assertThat(w2Steps == -1 || plan.stepsLeft(c.batch()) == w2Steps)
                            .isTrue();
                    w2Steps = plan.stepsLeft(c.batch());
                    for (int id : handedOut(plan, Integer.MAX_VALUE)) {
                        seen[id]++;
                    }
                    left = plan.perRank();
                }
                String what = c + " after " + k + " steps at " + c.w1() + ", " + after;
                int total = Arrays.stream(seen).sum();
                if (c.remainder() == Remainder.DROP) {
                    assertThat(Arrays.stream(seen).max().orElse(0)).as(what).isLessThanOrEqualTo(1);
                    // only the last segment's tail is left out: fewer than w2 examples
                    assertThat(n - total).as(what).isBetween(0, c.w2() - 1);
                } else if (n > 0) {
                    assertThat(Arrays.stream(seen).min().orElse(1)).as(what).isGreaterThanOrEqualTo(1);
                    assertThat(total - n).as(what).isLessThanOrEqualTo(Math.max(0, duplicatesAllowed) + c.w2() - 1);
                }
                assertThat(left).isGreaterThanOrEqualTo(0);
            }
        }
    }

    @Test
    void eachRankReadsContiguousRowGroupsOfAnEpochThatDependsOnSeedAndEpoch() {
        long[] rows = new long[40];
        Arrays.fill(rows, 10);
        int[] e0 = EpochPlan.epochStream(rows, 7, 0);
        assertThat(e0).isEqualTo(EpochPlan.epochStream(rows, 7, 0));
        assertThat(e0).isNotEqualTo(EpochPlan.epochStream(rows, 7, 1));
        assertThat(e0).isNotEqualTo(EpochPlan.epochStream(rows, 8, 0));
        for (int i = 0; i < e0.length; i += 10) { // whole row groups, each in row order
            for (int j = 1; j < 10; j++) {
                assertThat(e0[i + j]).isEqualTo(e0[i] + j);
            }
        }
        EpochPlan plan = EpochPlan.compute(rows, 7, Remainder.DROP, 0, DataPosition.start(0), 4, 1);
        assertThat(Arrays.stream(plan.input).map(id -> id / 10).distinct().count())
                .isEqualTo(10);
    }

    @Test
    void theShuffleBufferHandsOutOnlyWhatItHasRead() {
        SplittableRandom rng = new SplittableRandom(1);
        for (int buffer : new int[] {0, 1, 2, 7, 100}) {
            int[] order = EpochPlan.shuffleOrder(500, buffer, rng);
            assertThat(order.clone()).satisfies(o -> {
                Arrays.sort(o);
                for (int i = 0; i < o.length; i++) {
                    assertThat(o[i]).isEqualTo(i);
                }
            });
            for (int j = 0; j < order.length; j++) {
                assertThat(order[j]).isLessThanOrEqualTo(j + Math.max(1, buffer));
            }
            if (buffer <= 1) {
                for (int j = 0; j < order.length; j++) {
                    assertThat(order[j]).isEqualTo(j);
                }
            }
        }
    }

    @Test
    void positionsRoundTripAndMergeSegmentsOfOneWorldSize() {
        DataPosition p = DataPosition.start(4)
                .consumed(4, 10)
                .consumed(4, 12)
                .consumed(2, 0)
                .consumed(3, 5);
        assertThat(p.toString()).isEqualTo("epoch 4: 4x12, 3x5");
        assertThat(DataPosition.fromBytes(p.toBytes())).isEqualTo(p);
        assertThat(DataPosition.parse("epoch 0:")).isEqualTo(DataPosition.start(0));
        assertThatThrownBy(() -> DataPosition.parse("step 3"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not a data position");
        long[] rows = {10, 10};
        assertThatThrownBy(
                        () -> EpochPlan.compute(rows, 1, Remainder.PAD, 0, DataPosition.parse("epoch 0: 2x11"), 2, 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("consumed 11 examples per rank");
    }
}
