package dev.cohort.hier;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Layouts hier cannot run are refused at once on every host, before anything connects. */
class HierLayoutTest {

    private static Map<String, String> env(int rank, int world, int local, int localWorld, int host, int hosts) {
        return Map.of("MASTER_ADDR", "127.0.0.1", "MASTER_PORT", "29999", "RANK", Integer.toString(rank),
                "WORLD_SIZE", Integer.toString(world), "LOCAL_RANK", Integer.toString(local),
                "LOCAL_WORLD_SIZE", Integer.toString(localWorld), "GROUP_RANK", Integer.toString(host),
                "GROUP_WORLD_SIZE", Integer.toString(hosts), "COHORT_RUN_ID", "layout-test");
    }

    @Test
    void hostsWithDifferentNumbersOfRanksAreRefusedOnEveryHost() {
        // 2 + 1 ranks on 2 hosts: host 1's single rank divides WORLD_SIZE=3, yet it must fail too
        // (it used to wait for the other host until its connect timeout).
        for (Map<String, String> env : List.of(env(0, 3, 0, 2, 0, 2), env(2, 3, 0, 1, 1, 2))) {
            assertThatThrownBy(() -> HierEngine.connect(new HierOptions(), env))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("the hier backend needs the same number of ranks on every host")
                    .hasMessageContaining("WORLD_SIZE=3 ranks on GROUP_WORLD_SIZE=2 hosts")
                    .hasMessageContaining("use --distributed-backend gloo");
        }
    }
}
