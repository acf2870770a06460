package dev.cohort.gloo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** How long a waiting rank polls: the default from the host's CPUs, or what the user set. */
class GlooOptionsTest {

    @Test
    void ranksPollWhereTheHostHasACpuForEachAndSleepAtOnceWhereNot() {
        int cpus = GlooOptions.hostCpus();
        assertThat(cpus).isGreaterThanOrEqualTo(Runtime.getRuntime().availableProcessors());
        assertThat(new GlooOptions().parse().spin(cpus)).isEqualTo(GlooOptions.DEFAULT_SPIN);
        assertThat(new GlooOptions().parse().spin(cpus + 1)).isEqualTo(Duration.ZERO);
    }

    @Test
    void theOptionOverridesTheDefault() {
        int cpus = GlooOptions.hostCpus();
        assertThat(new GlooOptions().parse("--gloo-spin-us=0").spin(1)).isEqualTo(Duration.ZERO);
        assertThat(new GlooOptions().parse("--gloo-spin-us=200").spin(cpus + 1)).isEqualTo(Duration.ofNanos(200_000));
        assertThat(new GlooOptions().spin(Duration.ofNanos(20_000)).spin(cpus + 1))
                .isEqualTo(Duration.ofNanos(20_000));
    }

    @Test
    void aNegativeTimeIsRefusedWithTheOptionsName() {
        assertThatThrownBy(() -> new GlooOptions().parse("--gloo-spin-us=-1").spin(1))
                .hasMessageContaining("--gloo-spin-us must be >= 0");
        assertThatThrownBy(() -> new GlooOptions().spin(Duration.ofNanos(-1))).hasMessageContaining("--gloo-spin-us");
    }
}
