package dev.cohort.dist;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

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
                .contains("problem(s): network, gloo, mpi");
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

    /** {@code cohort doctor args} in a JVM of its own, behind {@code prefix}, with {@code env} added. */
    private Run doctor(List<String> prefix, Map<String, String> env, String... args) throws Exception {
        List<String> command = new ArrayList<>(prefix);
        command.addAll(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED",
                "-cp",
                System.getProperty("java.class.path"),
                CohortCommand.class.getName(),
                "doctor"));
        command.addAll(List.of(args));
        Path log = dir.resolve("doctor.log");
        ProcessBuilder pb =
                new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().putAll(env);
        Process p = pb.start();
        try {
            assertThat(p.waitFor(200, TimeUnit.SECONDS)).as("doctor ended").isTrue();
            return new Run(p.exitValue(), Files.readString(log));
        } finally {
            p.destroyForcibly();
        }
    }
}
