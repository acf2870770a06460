package dev.cohort.dist;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.cohort.testkit.TwoHosts;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code cohort doctor} tells a good host from a broken one: on this host every check passes and
 * each engine runs a real allreduce through the launcher; a wrong interface, a missing Open MPI and
 * a /dev/shm without room are each a problem that names what to do, with exit status 1.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class DoctorCommandTest {

    private static final boolean SHARED_MEMORY_JDK = Runtime.version().feature() >= 22;

    @TempDir
    Path dir;

    @Test
    void aGoodHostPassesAndEveryEngineNamedRunsAnAllreduce() {
        Cli cli = new Cli();
        int rc = cli.run("doctor", "--backend", SHARED_MEMORY_JDK ? "tcp,shm" : "tcp");
        assertThat(rc).as("exit status; output:%n%s", cli.out).isZero();
        assertThat(cli.out.toString())
                .containsPattern("OK +libtorch +JavaCPP's libtorch loads; computes with ")
                .containsPattern("OK +tcp +works: [0-9.]+ ms, [0-9.]+ GB/s bus bandwidth")
                .contains("no problems found");
        if (SHARED_MEMORY_JDK) {
            assertThat(cli.out.toString()).containsPattern("OK +shm +works: ");
        }
    }

    @Test
    void aWrongInterfaceAndAMissingOpenMpiAreProblemsThatSayWhatToDo() throws Exception {
        Run run = doctor(
                List.of(),
                Map.of("GLOO_SOCKET_IFNAME", "bogus0", "COHORT_MPI_LIBRARY", "/nonexistent/libmpi.so.40"),
                "--backend",
                "gloo,mpi");
        assertThat(run.exit).as("exit status; output:%n%s", run.output).isEqualTo(1);
        assertThat(run.output)
                .containsPattern("PROBLEM +network +GLOO_SOCKET_IFNAME=bogus0 names no interface that is up here")
                .containsPattern("PROBLEM +gloo +the allreduce failed .*bogus0")
                .containsPattern("PROBLEM +mpi +cannot run here: ")
                .contains("problem(s): network, gloo, mpi")
                // Started without the cohort command's flags: the one Arrow needs is missing.
                .containsPattern("NOTE +flags +this JVM and the workers cohort run starts lack "
                        + "--add-opens=java.base/java.nio=ALL-UNNAMED \\(Arrow IPC files");
    }

    /** A library that is not Open MPI's (another ABI, as MPICH's): the mpi engine refuses, saying so. */
    @Test
    void aLibraryOfAnotherAbiThanOpenMpisIsAProblem() throws Exception {
        assumeTrue(SHARED_MEMORY_JDK, "the mpi engine needs JDK 22+");
        Path notMpi = Path.of("/usr/lib/x86_64-linux-gnu/libz.so.1");
        assumeTrue(Files.exists(notMpi), "no " + notMpi);
        Run run = doctor(List.of(), Map.of("COHORT_MPI_LIBRARY", notMpi.toString()), "--backend", "mpi");
        assertThat(run.exit).as("exit status; output:%n%s", run.output).isEqualTo(1);
        assertThat(run.output)
                .containsPattern("PROBLEM +mpi +cannot run here: " + notMpi + " is not Open MPI's library")
                .contains("problem(s): mpi");
    }

    @Test
    void aDevShmWithoutRoomIsAProblemAndTheShmEngineRefusesByName() throws Exception {
        assumeTrue(SHARED_MEMORY_JDK, "the shm engine needs JDK 22+");
        assumeTrue("root".equals(System.getProperty("user.name")), "mounting a small /dev/shm needs root");
        assumeTrue(Files.isExecutable(Path.of("/usr/bin/unshare")), "no unshare (util-linux)");
        // A mount namespace of its own with a 512 KiB tmpfs over /dev/shm, as a container with a tiny --shm-size.
        Run run = doctor(
                List.of(
                        "/usr/bin/unshare",
                        "--mount",
                        "sh",
                        "-c",
                        "mount -t tmpfs -o size=512k tmpfs /dev/shm && exec \"$@\"",
                        "doctor"),
                Map.of(),
                "--backend",
                "shm");
        assertThat(run.exit).as("exit status; output:%n%s", run.output).isEqualTo(1);
        assertThat(run.output)
                .containsPattern("PROBLEM +/dev/shm +[0-9.]+ MiB free of [0-9.]+ MiB .*too little for the shm engine")
                .containsPattern("PROBLEM +shm +the allreduce failed .*slots need");
    }

    private record Run(int exit, String output) {}

    /**
     * Across two hosts (network namespaces), each running {@code cohort doctor --nnodes 2} with its
     * node rank: the allreduce spans both, node 0 reports its time and bandwidth, node 1 that its
     * ranks took part.
     */
    @Test
    void acrossTwoHostsEachNodeTakesPartAndNodeZeroReportsTheAllreduce() throws Exception {
        try (TwoHosts hosts = TwoHosts.createOrSkip()) {
            String port = Integer.toString(TwoHosts.port(23100));
            List<Process> nodes = new ArrayList<>();
            for (int node = 0; node < 2; node++) {
                nodes.add(start(
                        hosts.on(node, List.of()),
                        Map.of(),
                        dir.resolve("node-" + node + ".log"),
                        "--backend",
                        "tcp",
                        "--nnodes",
                        "2",
                        "--node-rank",
                        Integer.toString(node),
                        "--master-addr",
                        TwoHosts.ADDRESS_A,
                        "--master-port",
                        port,
                        "--insecure-no-secret"));
            }
            List<Run> runs = new ArrayList<>();
            for (int node = 0; node < 2; node++) {
                runs.add(finish(nodes.get(node), dir.resolve("node-" + node + ".log")));
            }
            assertThat(runs.get(0).exit)
                    .as("node 0; output:%n%s", runs.get(0).output)
                    .isZero();
            assertThat(runs.get(0).output)
                    .contains("through the launcher, across 2 hosts")
                    .containsPattern("OK +network +node 0 at 192.0.2.1 resolves; the others will dial this host at "
                            + "192.0.2.1")
                    .containsPattern("OK +tcp +works: [0-9.]+ ms, [0-9.]+ GB/s bus bandwidth");
            assertThat(runs.get(1).exit)
                    .as("node 1; output:%n%s", runs.get(1).output)
                    .isZero();
            assertThat(runs.get(1).output)
                    .containsPattern("the others will dial this host at 192.0.2.2")
                    .containsPattern("OK +tcp +works: this host's ranks took part")
                    // One kernel's clock in both namespaces: within the round trip.
                    .containsPattern("OK +clock +rank 1's clock stands [-+]0\\.\\d{3} ms from rank 0's \\(± ");
            assertThat(runs.get(0).output).containsPattern("NOTE +clock +rank 0 runs here");
        }
    }

    /** {@code cohort doctor args} in a JVM of its own, behind {@code prefix}, with {@code env} added. */
    private Run doctor(List<String> prefix, Map<String, String> env, String... args) throws Exception {
        Path log = dir.resolve("doctor.log");
        return finish(start(prefix, env, log, args), log);
    }

    private static Process start(List<String> prefix, Map<String, String> env, Path log, String... args)
            throws Exception {
        List<String> command = new ArrayList<>(prefix);
        command.addAll(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED",
                "-cp",
                System.getProperty("java.class.path"),
                CohortCommand.class.getName(),
                "doctor"));
        command.addAll(List.of(args));
        ProcessBuilder pb =
                new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().putAll(env);
        return pb.start();
    }

    private static Run finish(Process p, Path log) throws Exception {
        try {
            assertThat(p.waitFor(200, TimeUnit.SECONDS)).as("doctor ended").isTrue();
            return new Run(p.exitValue(), Files.readString(log));
        } finally {
            p.destroyForcibly();
        }
    }
}
