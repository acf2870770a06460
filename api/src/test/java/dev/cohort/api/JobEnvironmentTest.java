package dev.cohort.api;

import static dev.cohort.api.EnvVars.env;
import static dev.cohort.api.EnvVars.vars;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.cohort.api.JobEnvironment.Launcher;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Each launcher's variables, as its workers see them, read into Cohort's launch environment. */
@Timeout(value = 10, unit = TimeUnit.SECONDS)
class JobEnvironmentTest {

    private static LaunchEnvironment launch(JobEnvironment job) {
        return LaunchEnvironment.parse(job.variables());
    }

    @Test
    void cohortsLauncherMarksItsWorkers() {
        LaunchEnvironment e = new LaunchEnvironment("10.0.0.1", 29500, new Topology(1, 2, 1, 2, 0), 0, "r");
        JobEnvironment job = JobEnvironment.detect(e.toMap());
        assertThat(job.launcher()).isEqualTo(Launcher.COHORT);
        assertThat(launch(job)).isEqualTo(e);
    }

    @Test
    void torchrunsWorkersJoinItsAgentStoreUnderItsRunAndRestarts() {
        // What torchrun (PyTorch 1.13) sets, measured: see the issue.
        JobEnvironment job = JobEnvironment.detect(
                vars(
                        "MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 RANK=1 WORLD_SIZE=4 LOCAL_RANK=1 LOCAL_WORLD_SIZE=2 GROUP_RANK=0 GROUP_WORLD_SIZE=2 ROLE_RANK=1 TORCHELASTIC_RESTART_COUNT=3 TORCHELASTIC_RUN_ID=job/7 TORCHELASTIC_USE_AGENT_STORE=True TORCHELASTIC_MAX_RESTARTS=3"));
        assertThat(job.launcher()).isEqualTo(Launcher.TORCHRUN);
        LaunchEnvironment e = launch(job);
        assertThat(e.topology()).isEqualTo(new Topology(1, 4, 1, 2, 0));
        assertThat(e.restartCount()).isEqualTo(3);
        assertThat(e.runId()).isEqualTo("torchrun-job-7");
        assertThat(job.variables()).containsEntry(JobEnvironment.AGENT_STORE, "1");
        assertThat(job.describe()).contains("torchrun", "rank 1 of 4", "joining torchrun's store");
    }

    @Test
    void kubernetesPodsWithoutLocalVariablesHaveAnUnknownLayout() {
        JobEnvironment job =
                JobEnvironment.detect(vars("MASTER_ADDR=job-master-0 MASTER_PORT=23456 RANK=2 WORLD_SIZE=3 "
                        + "KUBERNETES_SERVICE_HOST=10.96.0.1"));
        assertThat(job.launcher()).isEqualTo(Launcher.KUBERNETES);
        JobLayout layout = JobLayout.of(job.variables());
        assertThat(layout).isEqualTo(new JobLayout(3, 0, 0));
        assertThat(layout.known()).isFalse();
        assertThat(layout.oneHost()).isFalse();
        assertThat(layout.sharedHosts()).isFalse();
        assertThat(job.describe()).contains("learned at rendezvous");
        // A pod that runs several workers says so, and is believed.
        JobEnvironment several = JobEnvironment.detect(
                vars("MASTER_ADDR=m MASTER_PORT=1 RANK=3 WORLD_SIZE=4 LOCAL_RANK=1 LOCAL_WORLD_SIZE=2 "
                        + "GROUP_RANK=1 KUBERNETES_SERVICE_HOST=10.96.0.1"));
        assertThat(launch(several).topology()).isEqualTo(new Topology(3, 4, 1, 2, 1));
    }

    @Test
    void plainVariablesAreReadAsTheyAre() {
        Map<String, String> vars = vars("MASTER_ADDR=h MASTER_PORT=1 RANK=0 WORLD_SIZE=2");
        JobEnvironment job = JobEnvironment.detect(vars);
        assertThat(job.launcher()).isEqualTo(Launcher.VARIABLES);
        assertThat(job.variables()).isEqualTo(vars);
        assertThat(JobEnvironment.detect(env("PATH", "/bin")).launcher()).isEqualTo(Launcher.NONE);
    }

    @Test
    void openMpiGivesRanksAndTheHostFromItsLocalSize() {
        Map<String, String> vars = vars("OMPI_COMM_WORLD_RANK=5 OMPI_COMM_WORLD_SIZE=8 OMPI_COMM_WORLD_LOCAL_RANK=1 "
                + "OMPI_COMM_WORLD_LOCAL_SIZE=4 MASTER_ADDR=n0 MASTER_PORT=29500");
        JobEnvironment job = JobEnvironment.detect(vars);
        assertThat(job.launcher()).isEqualTo(Launcher.OPEN_MPI);
        assertThat(launch(job).topology()).isEqualTo(new Topology(5, 8, 1, 4, 1));
        assertThat(job.variables())
                .containsEntry(LaunchEnvironment.GROUP_WORLD_SIZE, "2")
                .doesNotContainKey(LaunchEnvironment.RUN_ID);
        // Each mpirun job its own shared-memory file names: the run id from Open MPI's job id.
        vars.put("OMPI_MCA_ess_base_jobid", "1358495745");
        assertThat(JobEnvironment.detect(vars).variables())
                .containsEntry(LaunchEnvironment.RUN_ID, "mpirun-1358495745");
        vars.put(LaunchEnvironment.RUN_ID, "mine");
        assertThat(JobEnvironment.detect(vars).variables()).containsEntry(LaunchEnvironment.RUN_ID, "mine");
        vars.remove(LaunchEnvironment.RUN_ID);

        vars.remove("MASTER_PORT");
        // The mpi engine needs no rendezvous address; the engines that do say how to give one.
        JobEnvironment noAddress = JobEnvironment.detect(vars);
        assertThat(noAddress.notes()).anyMatch(n -> n.contains("the mpi engine needs none"));
        assertThatThrownBy(() -> LaunchEnvironment.parse(noAddress.variables()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("MASTER_ADDR and MASTER_PORT")
                .hasMessageContaining("mpirun -x")
                .hasMessageContaining("--distributed-backend mpi");
        vars.put("MASTER_PORT", "29500");
        vars.put("OMPI_COMM_WORLD_LOCAL_SIZE", "3");
        assertThatThrownBy(() -> JobEnvironment.detect(vars)).hasMessageContaining("different numbers of ranks");
    }

    @Test
    void slurmGivesRanksNodesAMasterAndAPort() {
        Map<String, String> vars = vars("SLURM_PROCID=4 SLURM_NTASKS=5 SLURM_LOCALID=0 SLURM_NODEID=2 SLURM_NNODES=3 "
                + "SLURM_STEP_TASKS_PER_NODE=2(x2),1 SLURM_STEP_NODELIST=gpu[07-08,12] "
                + "SLURM_JOB_ID=123456 SLURM_STEP_ID=0");
        JobEnvironment job = JobEnvironment.detect(vars);
        assertThat(job.launcher()).isEqualTo(Launcher.SLURM);
        LaunchEnvironment e = launch(job);
        assertThat(e.topology()).isEqualTo(new Topology(4, 5, 0, 1, 2));
        assertThat(e.masterAddr()).isEqualTo("gpu07");
        assertThat(e.masterPort()).isEqualTo(JobEnvironment.SLURM_PORT_BASE + 123456 % JobEnvironment.SLURM_PORT_SPAN);
        assertThat(e.runId()).isEqualTo("slurm-123456.0");
        assertThat(job.variables()).containsEntry(LaunchEnvironment.GROUP_WORLD_SIZE, "3");

        vars.put("MASTER_ADDR", "login1");
        vars.put("MASTER_PORT", "29400");
        assertThat(launch(JobEnvironment.detect(vars)).masterAddr()).isEqualTo("login1");
        assertThat(launch(JobEnvironment.detect(vars)).masterPort()).isEqualTo(29400);
        // sbatch's own shell is no step of tasks: nothing is read from it.
        vars.remove("SLURM_STEP_ID");
        assertThat(JobEnvironment.detect(vars).launcher()).isEqualTo(Launcher.NONE);
    }

    @Test
    void slurmsListsAreExpanded() {
        assertThat(JobEnvironment.tasksPerNode("T", "2(x3),1")).isEqualTo(List.of(2, 2, 2, 1));
        assertThat(JobEnvironment.tasksPerNode("T", "4")).isEqualTo(List.of(4));
        assertThatThrownBy(() -> JobEnvironment.tasksPerNode("T", "2(x")).hasMessageContaining("T='2(x'");
        assertThat(JobEnvironment.firstHost("L", "node1,node2")).isEqualTo("node1");
        assertThat(JobEnvironment.firstHost("L", "gpu[07-09,12],cpu1")).isEqualTo("gpu07");
        assertThat(JobEnvironment.firstHost("L", "rack1-n[3-4]-ib")).isEqualTo("rack1-n3-ib");
        assertThat(JobEnvironment.firstHost("L", "single")).isEqualTo("single");
    }

    @Test
    void variablesThatContradictTheLauncherAreNamed() {
        assertThatThrownBy(() -> JobEnvironment.detect(
                        vars("SLURM_PROCID=1 SLURM_NTASKS=2 SLURM_LOCALID=1 SLURM_NODEID=0 SLURM_NNODES=1 "
                                + "SLURM_TASKS_PER_NODE=2 SLURM_JOB_NODELIST=n1 SLURM_JOB_ID=9 SLURM_STEP_ID=0 "
                                + "WORLD_SIZE=4")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("WORLD_SIZE=4 but Slurm says 2 (SLURM_NTASKS)");
        assertThatThrownBy(() -> JobEnvironment.detect(
                        vars("OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=0 "
                                + "OMPI_COMM_WORLD_LOCAL_SIZE=2 LOCAL_WORLD_SIZE=1 MASTER_ADDR=h MASTER_PORT=1")))
                .hasMessageContaining("LOCAL_WORLD_SIZE=1 but Open MPI says 2 (OMPI_COMM_WORLD_LOCAL_SIZE)");
        assertThatThrownBy(() -> JobEnvironment.detect(
                        vars("MASTER_ADDR=h MASTER_PORT=1 RANK=0 WORLD_SIZE=2 TORCHELASTIC_RUN_ID=x "
                                + "TORCHELASTIC_RESTART_COUNT=1 COHORT_RESTART_COUNT=0")))
                .hasMessageContaining("COHORT_RESTART_COUNT=0 but torchrun says 1");
    }
}
