package dev.cohort.testkit;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.cohort.testkit.JvmWorkers.Result;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Starts a Java main class as the ranks of an MPI job through Open MPI's {@code mpirun}, as a user
 * would: {@code mpirun -np N java ...}. The JVM is started through a one-line wrapper script,
 * because mpirun rewrites a command line whose program is {@code java} (for Open MPI's own Java
 * bindings). Each rank's output also goes to its own file ({@code --output-filename}), which
 * {@link Job#linesOf} reads. Skipped where Open MPI is not installed.
 */
public final class MpiRun {

    public static final Path MPIRUN = Path.of("/usr/bin/mpirun");

    private MpiRun() {}

    /** A finished job: mpirun's exit code and output, and the directory of the ranks' own output. */
    public record Job(Result mpirun, Path outputs) {
        public int exitCode() {
            return mpirun.exitCode();
        }

        public String output() {
            return mpirun.output();
        }

        /** What rank {@code rank} printed on its standard output. */
        public List<String> linesOf(int rank) {
            Path file = outputs.resolve("1").resolve("rank." + rank).resolve("stdout");
            try {
                return Files.isRegularFile(file) ? Files.readAllLines(file) : List.of();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        /** Rank {@code rank}'s standard output as one text. */
        public String textOf(int rank) {
            return String.join("\n", linesOf(rank));
        }

        /**
         * Checks a job of 2 ranks on each of {@link #acrossTwoHosts}'s hosts: it ended well, every
         * rank printed OK, rank 0 found itself first on the first host, and rank 2 first on the
         * second and printed {@code rank2Says}.
         */
        public void assertOkAcrossTwoHosts(String... rank2Says) {
            org.assertj.core.api.Assertions.assertThat(exitCode()).as(output()).isZero();
            List<String> expected = new java.util.ArrayList<>(List.of(rank2Says));
            expected.add("TOPOLOGY Topology[rank=2, worldSize=4, localRank=0, localWorldSize=2, nodeRank=1]");
            org.assertj.core.api.Assertions.assertThat(linesOf(2)).as(output()).containsAll(expected);
            org.assertj.core.api.Assertions.assertThat(linesOf(0))
                    .as(output())
                    .contains("TOPOLOGY Topology[rank=0, worldSize=4, localRank=0, localWorldSize=2, nodeRank=0]");
            for (int r = 0; r < 4; r++) {
                org.assertj.core.api.Assertions.assertThat(linesOf(r))
                        .as(output())
                        .anyMatch(l -> l.startsWith("OK rank "));
            }
        }
    }

    /** Runs {@code main} as {@code ranks} ranks. */
    public static Job run(Path tmp, int ranks, Class<?> main, List<String> args, Duration timeout) {
        return run(tmp, ranks, List.of(), main, args, timeout);
    }

    /** As {@link #run(Path, int, Class, List, Duration)} with {@code mpirunOptions} before the program. */
    public static Job run(
            Path tmp, int ranks, List<String> mpirunOptions, Class<?> main, List<String> args, Duration timeout) {
        return run(tmp, ranks, mpirunOptions, command -> command, main, args, timeout);
    }

    /** As {@link #run(Path, int, List, Class, List, Duration)}, mpirun's command line passed through {@code around}. */
    public static Job run(
            Path tmp,
            int ranks,
            List<String> mpirunOptions,
            java.util.function.UnaryOperator<List<String>> around,
            Class<?> main,
            List<String> args,
            Duration timeout) {
        assumeTrue(Files.isExecutable(MPIRUN), "Open MPI is not installed (apt-get install openmpi-bin)");
        Path outputs = tmp.resolve("ranks-" + System.nanoTime());
        List<String> cmd = new ArrayList<>(List.of(
                MPIRUN.toString(),
                "--allow-run-as-root",
                "--oversubscribe",
                "--output-filename",
                outputs.toString(),
                "-np",
                Integer.toString(ranks)));
        cmd.addAll(mpirunOptions);
        List<String> java = JvmWorkers.javaCommand(
                main,
                List.of("-Xmx256m", "--enable-native-access=ALL-UNNAMED", "--add-modules", "jdk.incubator.vector"),
                args);
        cmd.add(wrapper(tmp, java.get(0)).toString());
        cmd.addAll(java.subList(1, java.size()));
        List<String> started = around.apply(cmd);
        Result mpirun = JvmWorkers.run(
                        1, r -> started, r -> Map.of(), tmp.resolve("mpirun-" + System.nanoTime()), timeout)
                .get(0);
        return new Job(mpirun, outputs);
    }

    /**
     * Runs {@code main} as 2 ranks on each of the two namespaced {@code hosts}: mpirun in the
     * first, Open MPI's daemon started in the second through an rsh agent that enters it (as ssh
     * would log in), each namespace with its own host name (a UTS namespace), TCP between them.
     */
    public static Job acrossTwoHosts(Path tmp, TwoHosts hosts, Class<?> main, List<String> args, Duration timeout) {
        String nsA = hosts.on(0, List.of()).get(3);
        String nsB = hosts.on(1, List.of()).get(3);
        // Open MPI calls the agent as "agent HOST COMMAND...", the command meant for a remote shell.
        Path agent = script(
                tmp,
                "netns-agent",
                "#!/bin/sh\n"
                        + "host=\"$1\"; shift\n"
                        + "case \"$host\" in " + TwoHosts.ADDRESS_B + ") ns=" + nsB + "; name=host-b ;; *) ns=" + nsA
                        + "; name=host-a ;; esac\n"
                        + "exec ip netns exec \"$ns\" unshare --uts /bin/sh -c \"hostname $name; $*\"\n");
        String subnet = "192.0.2.0/24";
        List<String> options = List.of(
                "--host",
                TwoHosts.ADDRESS_A + ":2," + TwoHosts.ADDRESS_B + ":2",
                "--mca",
                "plm_rsh_agent",
                agent.toString(),
                "--mca",
                "btl",
                "self,vader,tcp",
                "--mca",
                "btl_tcp_if_include",
                subnet,
                "--mca",
                "oob_tcp_if_include",
                subnet);
        return run(
                tmp,
                4,
                options,
                command -> {
                    List<String> inA = new ArrayList<>(List.of(
                            "ip",
                            "netns",
                            "exec",
                            nsA,
                            "unshare",
                            "--uts",
                            "/bin/sh",
                            "-c",
                            "hostname host-a; exec \"$0\" \"$@\""));
                    inA.addAll(command);
                    return inA;
                },
                main,
                args,
                timeout);
    }

    /**
     * Runs {@code main} with {@code args} across two new namespaced hosts ({@link #acrossTwoHosts})
     * and checks that every rank ended OK and rank 2 printed {@code rank2Says}
     * ({@link Job#assertOkAcrossTwoHosts}). Skipped where the hosts cannot be made
     * ({@link TwoHosts#createOrSkip()}).
     */
    public static Job okAcrossTwoNewHosts(
            Path tmp, Class<?> main, List<String> args, Duration timeout, String... rank2Says) {
        Job job;
        try (TwoHosts hosts = TwoHosts.createOrSkip()) {
            job = acrossTwoHosts(tmp, hosts, main, args, timeout);
        }
        job.assertOkAcrossTwoHosts(rank2Says);
        return job;
    }

    /** A script that runs {@code java} with its arguments. */
    private static Path wrapper(Path dir, String java) {
        return script(dir, "java-for-mpirun", "#!/bin/sh\nexec " + java + " \"$@\"\n");
    }

    /** An executable script {@code name} in {@code dir}. */
    public static Path script(Path dir, String name, String text) {
        try {
            Files.createDirectories(dir);
            Path script = dir.resolve(name);
            Files.writeString(script, text);
            Files.setPosixFilePermissions(script, PosixFilePermissions.fromString("rwxr-xr-x"));
            return script;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
