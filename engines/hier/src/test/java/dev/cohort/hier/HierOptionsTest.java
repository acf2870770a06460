package dev.cohort.hier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** How long the hosts' leaders poll: the gloo engine's default unless set. */
class HierOptionsTest {

    private static HierOptions parse(String... args) {
        HierOptions options = new HierOptions();
        new CommandLine(options).parseArgs(args);
        return options;
    }

    @Test
    void unsetMeansTheGlooDefaultForTheHost() {
        assertThat(parse().leadersSpin()).isEmpty();
    }

    @Test
    void setItIsUsedAsGiven() {
        assertThat(parse("--hier-leaders-spin-us=0").leadersSpin()).contains(Duration.ZERO);
        assertThat(parse("--hier-leaders-spin-us=120").leadersSpin()).contains(Duration.ofNanos(120_000));
        assertThat(new HierOptions().leadersSpin(Duration.ofNanos(30_000)).leadersSpin()).contains(Duration.ofNanos(30_000));
    }

    @Test
    void aNegativeTimeIsRefusedWithTheOptionsName() {
        assertThatThrownBy(() -> parse("--hier-leaders-spin-us=-5").leadersSpin())
                .hasMessageContaining("--hier-leaders-spin-us must be >= 0");
        assertThatThrownBy(() -> new HierOptions().leadersSpin(Duration.ofNanos(-1)))
                .hasMessageContaining("--hier-leaders-spin-us");
    }
}
