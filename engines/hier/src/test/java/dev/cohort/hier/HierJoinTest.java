package dev.cohort.hier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.cohort.api.collective.JoinException;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** How joining fails: with the api's {@link JoinException}, naming this rank and the part it could not join. */
class HierJoinTest {

    @Test
    @Timeout(value = 30, unit = TimeUnit.SECONDS)
    void aRankAloneInItsHostsShmGroupFailsToJoinWithAJoinException() {
        // Rank 0 of a host of two ranks, whose rank 1 never starts: the shm group cannot form.
        Map<String, String> env = Map.of(
                "RANK", "0",
                "WORLD_SIZE", "2",
                "LOCAL_RANK", "0",
                "LOCAL_WORLD_SIZE", "2",
                "GROUP_RANK", "0",
                "MASTER_ADDR", "127.0.0.1",
                "MASTER_PORT", "1",
                "COHORT_RUN_ID", "hier-join-" + ProcessHandle.current().pid());
        HierOptions options = new HierOptions().connectTimeout(Duration.ofMillis(500));
        assertThatThrownBy(() -> HierEngine.connect(options, env))
                .isInstanceOf(JoinException.class)
                .hasMessageContaining("hier rank 0 of 2 (host 0, local rank 0)")
                .hasMessageContaining("could not join the shm group of host 0")
                .hasMessageContaining("rank 1 did not attach");
        assertThat(HierProcessesTest.leftovers(
                        "hier-join-" + ProcessHandle.current().pid()))
                .isEmpty();
    }
}
