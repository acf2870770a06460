package dev.cohort.hier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** How long the hosts' leaders poll: the gloo engine's default unless set. */
class HierOptionsTest {

    @Test
    void unsetMeansTheGlooDefaultForTheHost() {
        assertThat(new HierOptions().parse().leadersSpin()).isEmpty();
    }

    @Test
    void setItIsUsedAsGiven() {
        assertThat(new HierOptions().parse("--hier-leaders-spin-us=0").leadersSpin()).contains(Duration.ZERO);
        assertThat(new HierOptions().parse("--hier-leaders-spin-us=120").leadersSpin()).contains(Duration.ofNanos(120_000));
        assertThat(new HierOptions().leadersSpin(Duration.ofNanos(30_000)).leadersSpin()).contains(Duration.ofNanos(30_000));
    }

    @Test
    void aNegativeTimeIsRefusedWithTheOptionsName() {
        assertThatThrownBy(() -> new HierOptions().parse("--hier-leaders-spin-us=-5").leadersSpin())
                .hasMessageContaining("--hier-leaders-spin-us must be >= 0");
        assertThatThrownBy(() -> new HierOptions().leadersSpin(Duration.ofNanos(-1)))
                .hasMessageContaining("--hier-leaders-spin-us");
    }
}
