package dev.cohort.hier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.cohort.hier.HierOptions.Between;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** How long the hosts' leaders poll (the default of the engine between hosts unless set), and which engine that is. */
class HierOptionsTest {

    /** Rank 0 of 4 under mpirun, 2 per host: Open MPI's variables. */
    private static final Map<String, String> MPIRUN_TWO_HOSTS = Map.of(
            "OMPI_COMM_WORLD_RANK", "0",
            "OMPI_COMM_WORLD_SIZE", "4",
            "OMPI_COMM_WORLD_LOCAL_RANK", "0",
            "OMPI_COMM_WORLD_LOCAL_SIZE", "2");

    @Test
    void unsetMeansTheGlooDefaultForTheHost() {
        assertThat(new HierOptions().parse().leadersSpin()).isEmpty();
    }

    @Test
    void setItIsUsedAsGiven() {
        assertThat(new HierOptions().parse("--hier-leaders-spin-us=0").leadersSpin())
                .contains(Duration.ZERO);
        assertThat(new HierOptions().parse("--hier-leaders-spin-us=120").leadersSpin())
                .contains(Duration.ofNanos(120_000));
        assertThat(new HierOptions().leadersSpin(Duration.ofNanos(30_000)).leadersSpin())
                .contains(Duration.ofNanos(30_000));
    }

    @Test
    void aNegativeTimeIsRefusedWithTheOptionsName() {
        assertThatThrownBy(() ->
                        new HierOptions().parse("--hier-leaders-spin-us=-5").leadersSpin())
                .hasMessageContaining("--hier-leaders-spin-us must be >= 0");
        assertThatThrownBy(() -> new HierOptions().leadersSpin(Duration.ofNanos(-1)))
                .hasMessageContaining("--hier-leaders-spin-us");
    }

    @Test
    void theEngineBetweenHostsIsAutoUnlessNamed() {
        assertThat(new HierOptions().parse().between()).isEqualTo(Between.AUTO);
        assertThat(new HierOptions().parse("--hier-between", "tcp").between()).isEqualTo(Between.TCP);
        assertThat(new HierOptions().parse("--hier-between=GLOO").between()).isEqualTo(Between.GLOO);
        assertThat(new HierOptions().between(Between.TCP).between()).isEqualTo(Between.TCP);
    }

    @Test
    void namingTcpBetweenHostsNeedsNoLibtorch() {
        assertThat(HierBackend.betweenHosts(new HierOptions().between(Between.TCP), Map.of()))
                .isEqualTo(Between.TCP);
        assertThat(HierBackend.betweenHosts(new HierOptions().between(Between.GLOO), Map.of()))
                .isEqualTo(Between.GLOO);
    }

    @Test
    void autoBetweenHostsIsMpiWhereMpirunStartedTheJobAndNeedsNoAddressThere() {
        Map<String, String> mpirun = MPIRUN_TWO_HOSTS;
        assumeTrue(new dev.cohort.mpi.MpiBackend().isAvailable(), "Open MPI is not installed");
        assertThat(HierBackend.betweenHosts(new HierOptions(), mpirun)).isEqualTo(Between.MPI);
        assertThat(new HierBackend(new HierOptions(), mpirun).needsRendezvousAddress())
                .isFalse();
        assertThat(HierBackend.betweenHosts(new HierOptions(), Map.of())).isNotEqualTo(Between.MPI);
        assertThat(new HierBackend(new HierOptions(), Map.of()).needsRendezvousAddress())
                .isTrue();
        assertThat(new HierBackend(new HierOptions().between(Between.TCP), mpirun).needsRendezvousAddress())
                .isTrue();
        assertThat(new HierOptions().parse("--hier-between=mpi").between()).isEqualTo(Between.MPI);
    }

    @Test
    void underMpirunAcrossHostsAutoPrefersOpenMpiToHierAndShmOnOneHost() {
        // Measured across two namespaced hosts: Open MPI's own collectives ahead of hier over it.
        Map<String, String> twoHosts = MPIRUN_TWO_HOSTS;
        dev.cohort.api.JobLayout acrossHosts = new dev.cohort.api.JobLayout(4, 2, 2);
        dev.cohort.api.JobLayout oneHost = new dev.cohort.api.JobLayout(4, 4, 1);
        int hier = new HierBackend(new HierOptions(), twoHosts)
                .autoFit(acrossHosts)
                .orElseThrow()
                .preference();
        dev.cohort.mpi.MpiBackend mpi = new dev.cohort.mpi.MpiBackend(new dev.cohort.mpi.MpiOptions(), twoHosts);
        assertThat(mpi.autoFit(acrossHosts).orElseThrow().preference()).isGreaterThan(hier);
        assertThat(mpi.autoFit(acrossHosts).orElseThrow().reason())
                .contains("started by mpirun")
                .contains("measured ahead of hier");
        assertThat(mpi.autoFit(oneHost).orElseThrow().preference())
                .isLessThan(new dev.cohort.shm.ShmBackend()
                        .autoFit(oneHost)
                        .orElseThrow()
                        .preference());
        // Without mpirun, mpi stays last.
        assertThat(new dev.cohort.mpi.MpiBackend(new dev.cohort.mpi.MpiOptions(), Map.of())
                        .autoFit(acrossHosts)
                        .orElseThrow()
                        .preference())
                .isLessThan(hier);
    }

    @Test
    void anUnknownEngineBetweenHostsIsRefusedWithTheChoices() {
        assertThatThrownBy(() -> new HierOptions().parse("--hier-between=nccl").between())
                .hasMessageContaining("--hier-between must be gloo, tcp, mpi or auto, got 'nccl'");
    }
}
