package dev.cohort.hier;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Layouts hier cannot run are refused at once, before anything connects. */
class HierLayoutTest {

    private static Map<String, String> env(int rank, int world, int local, int localWorld, int host, int hosts) {
        return Map.of(
                "MASTER_ADDR",
                "127.0.0.1",
                "MASTER_PORT",
                "29999",
                "RANK",
                Integer.toString(rank),
                "WORLD_SIZE",
                Integer.toString(world),
                "LOCAL_RANK",
                Integer.toString(local),
                "LOCAL_WORLD_SIZE",
                Integer.toString(localWorld),
                "GROUP_RANK",
                Integer.toString(host),
                "GROUP_WORLD_SIZE",
                Integer.toString(hosts),
                "COHORT_RUN_ID",
                "layout-test");
    }

    @Test
    void hostsWithDifferentNumbersOfRanksNeedTheNumberOfHosts() {
        // 2 + 1 ranks without GROUP_WORLD_SIZE: the host of 2 cannot tell how many hosts there are.
        Map<String, String> env = new HashMap<>(env(0, 3, 0, 2, 0, 2));
        env.remove("GROUP_WORLD_SIZE");
        assertThatThrownBy(() -> HierEngine.connect(new HierOptions(), env))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("WORLD_SIZE=3 is not a multiple of LOCAL_WORLD_SIZE=2")
                .hasMessageContaining("needs GROUP_WORLD_SIZE");
    }

    @Test
    void aNumberOfHostsThatCannotBeIsRefused() {
        for (String hosts : List.of("0", "4", "two")) {
            Map<String, String> env = new HashMap<>(env(0, 3, 0, 2, 0, 2));
            env.put("GROUP_WORLD_SIZE", hosts);
            assertThatThrownBy(() -> HierEngine.connect(new HierOptions(), env))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(
                            "GROUP_WORLD_SIZE='" + hosts + "' must be a number of hosts in [1, WORLD_SIZE=3]");
        }
        assertThatThrownBy(() -> HierEngine.connect(new HierOptions(), env(2, 3, 0, 1, 2, 2)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("GROUP_RANK=2 but the job has 2 host(s)");
    }
}
