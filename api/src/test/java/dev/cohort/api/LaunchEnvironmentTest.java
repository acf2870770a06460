package dev.cohort.api;

import static dev.cohort.api.EnvVars.env;
import static dev.cohort.api.EnvVars.vars;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 10, unit = TimeUnit.SECONDS)
class LaunchEnvironmentTest {

    @Test
    void readsTorchrunsVariables() {
        LaunchEnvironment e =
                LaunchEnvironment.parse(vars("MASTER_ADDR=10.0.0.1 MASTER_PORT=29500 RANK=3 WORLD_SIZE=4 LOCAL_RANK=1 "
                        + "LOCAL_WORLD_SIZE=2 GROUP_RANK=1 COHORT_RESTART_COUNT=2 COHORT_RUN_ID=job-7"));
        assertThat(e.topology()).isEqualTo(new Topology(3, 4, 1, 2, 1));
        assertThat(e.restartCount()).isEqualTo(2);
        assertThat(e.runId()).isEqualTo("job-7");
        assertThat(LaunchEnvironment.parse(e.toMap())).isEqualTo(e);
    }

    @Test
    void restartCountIsAWholeNumberZeroWhenUnset() {
        assertThat(LaunchEnvironment.parseRestartCount(env())).isZero();
        assertThat(LaunchEnvironment.parseRestartCount(env("COHORT_RESTART_COUNT", " ")))
                .isZero();
        assertThat(LaunchEnvironment.parseRestartCount(env("COHORT_RESTART_COUNT", " 3 ")))
                .isEqualTo(3);
        assertThatThrownBy(() -> LaunchEnvironment.parseRestartCount(env("COHORT_RESTART_COUNT", "-1")))
                .hasMessageContaining("COHORT_RESTART_COUNT='-1' must be a whole number >= 0");
        assertThatThrownBy(() -> LaunchEnvironment.parseRestartCount(env("COHORT_RESTART_COUNT", "two")))
                .hasMessageContaining("COHORT_RESTART_COUNT='two' must be a whole number >= 0");
    }

    @Test
    void defaultsToOneNode() {
        LaunchEnvironment e = LaunchEnvironment.parse(vars("MASTER_ADDR=h MASTER_PORT=1 RANK=1 WORLD_SIZE=2"));
        assertThat(e.topology()).isEqualTo(new Topology(1, 2, 1, 2, 0));
        assertThat(e.runId()).isEqualTo("cohort");
    }

    @Test
    void errorsNameTheVariableAndItsValue() {
        assertThatThrownBy(() -> LaunchEnvironment.parse(env("MASTER_PORT", "1", "RANK", "0", "WORLD_SIZE", "1")))
                .hasMessageContaining("MASTER_ADDR is not set");
        assertThatThrownBy(() -> LaunchEnvironment.parse(vars("MASTER_ADDR=h MASTER_PORT=x RANK=0 WORLD_SIZE=1")))
                .hasMessageContaining("MASTER_PORT='x' is not an integer");
        assertThatThrownBy(() -> LaunchEnvironment.parse(vars("MASTER_ADDR=h MASTER_PORT=70000 RANK=0 WORLD_SIZE=1")))
                .hasMessageContaining("MASTER_PORT='70000'");
        assertThatThrownBy(() -> LaunchEnvironment.parse(vars("MASTER_ADDR=h MASTER_PORT=5 RANK=4 WORLD_SIZE=4")))
                .hasMessageContaining("RANK='4' must be in [0, WORLD_SIZE=4)");
        assertThatThrownBy(() -> LaunchEnvironment.parse(vars("MASTER_ADDR=h MASTER_PORT=5 RANK=0 WORLD_SIZE=0")))
                .hasMessageContaining("WORLD_SIZE='0' must be >= 1");
        assertThatThrownBy(() -> LaunchEnvironment.parse(
                        vars("MASTER_ADDR=h MASTER_PORT=5 RANK=0 WORLD_SIZE=4 LOCAL_RANK=0 LOCAL_WORLD_SIZE=2")))
                .hasMessageContaining("GROUP_RANK is not set");
        assertThatThrownBy(() -> LaunchEnvironment.parse(
                        vars("MASTER_ADDR=h MASTER_PORT=5 RANK=0 WORLD_SIZE=4 LOCAL_RANK=2 LOCAL_WORLD_SIZE=2 "
                                + "GROUP_RANK=0")))
                .hasMessageContaining("LOCAL_RANK='2' must be in [0, LOCAL_WORLD_SIZE=2)");
        assertThatThrownBy(() -> LaunchEnvironment.parse(env(
                        "MASTER_ADDR",
                        "h",
                        "MASTER_PORT",
                        "5",
                        "RANK",
                        "0",
                        "WORLD_SIZE",
                        "1",
                        "COHORT_RUN_ID",
                        "a b")))
                .hasMessageContaining("COHORT_RUN_ID='a b'");
    }

    @Test
    void aLayoutFromEveryRanksHost() {
        java.util.List<String> hosts = java.util.List.of("b", "a", "b", "c", "a");
        assertThat(Topology.ofHosts(hosts, 0)).isEqualTo(new Topology(0, 5, 0, 2, 0));
        assertThat(Topology.ofHosts(hosts, 2)).isEqualTo(new Topology(2, 5, 1, 2, 0));
        assertThat(Topology.ofHosts(hosts, 4)).isEqualTo(new Topology(4, 5, 1, 2, 1));
        assertThat(Topology.ofHosts(hosts, 3)).isEqualTo(new Topology(3, 5, 0, 1, 2));
    }
}
