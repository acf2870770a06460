package dev.cohort.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.cohort.runtime.WaitPolicy.Phase;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A wait's phases, parks, stall report and deadline, on a clock the test steps. */
@Timeout(value = 10, unit = TimeUnit.SECONDS)
class WaitPolicyTest {

    /** A clock that moves only when stepped or parked on; it records the parks. */
    static final class SteppedClock implements WaitPolicy.Clock {
        long now = 1_000_000_000L;
        final List<Long> parks = new ArrayList<>();

        @Override
        public long nanoTime() {
            return now;
        }

        @Override
        public void park(long nanos) {
            parks.add(nanos);
            now += nanos;
        }

        void step(long nanos) {
            now += nanos;
        }
    }

    private final SteppedClock clock = new SteppedClock();
    // spin 100 ns, yield until 1 µs, parks 1..8 µs, stall report after 50 µs
    private final WaitPolicy policy = new WaitPolicy(100, 1_000, 1_000, 8_000, 50_000, clock);

    @Test
    void aWaitSpinsThenYieldsThenParksTwiceAsLongEachTimeUpToTheLongestPark() {
        WaitPolicy.Wait wait = policy.newWait().begin(clock.now + 1_000_000);
        assertThat(wait.phase()).isEqualTo(Phase.SPIN);
        clock.step(100);
        assertThat(wait.phase()).isEqualTo(Phase.YIELD);
        clock.step(900);
        assertThat(wait.phase()).isEqualTo(Phase.PARK);
        for (int i = 0; i < 5; i++) {
            wait.idle();
        }
        assertThat(clock.parks).containsExactly(1_000L, 2_000L, 4_000L, 8_000L, 8_000L);
    }

    @Test
    void progressStartsTheSpinAgainButNotTheDeadlineOrTheStallTime() {
        WaitPolicy.Wait wait = policy.newWait().begin(clock.now + 60_000);
        clock.step(49_000);
        wait.moved();
        assertThat(wait.phase()).isEqualTo(Phase.SPIN);
        assertThat(wait.stalled()).isFalse();
        clock.step(1_000);
        assertThat(wait.stalled()).as("once the wait lasted the stall time").isTrue();
        assertThat(wait.stalled()).as("said once").isFalse();
        assertThat(wait.expired()).isFalse();
        clock.step(10_000);
        assertThat(wait.expired()).isTrue();
    }

    @Test
    void aParkEndsAtTheStallReportAndAtTheDeadline() {
        WaitPolicy.Wait wait = policy.newWait().begin(clock.now + 52_000, Phase.PARK);
        clock.step(49_500);
        assertThat(wait.sleepNanos(1_000_000)).as("until the stall report").isEqualTo(1_000);
        clock.step(500);
        assertThat(wait.stalled()).isTrue();
        assertThat(wait.sleepNanos(1_000_000)).as("until the deadline").isEqualTo(2_000);
    }

    @Test
    void aWaiterThatFindsTheCpuContendedParksFromThenOnUpToItsOwnLongestPark() {
        WaitPolicy.Wait wait = policy.newWait().begin(clock.now + 1_000_000, Phase.YIELD);
        assertThat(wait.phase()).isEqualTo(Phase.YIELD);
        wait.parkFromNow(3_000);
        assertThat(wait.phase()).isEqualTo(Phase.PARK);
        wait.idle();
        wait.idle();
        wait.idle();
        assertThat(clock.parks).containsExactly(1_000L, 2_000L, 3_000L);
    }

    @Test
    void aPolicyThatCannotParkIsRefusedSayingWhy() {
        assertThatThrownBy(() -> new WaitPolicy(0, 0, 0, 0, 0, clock))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("parks 0..0 ns");
    }
}
