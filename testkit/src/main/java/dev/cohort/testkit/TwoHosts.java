package dev.cohort.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * Test support: two "hosts" on this machine, Linux network namespaces joined by a veth pair, with
 * TEST-NET-1 addresses {@value #ADDRESS_A} and {@value #ADDRESS_B}. Needs root and iproute2;
 * {@link #unavailableReason()} says why not when they are missing, and {@link #createOrSkip()}
 * skips a test there. Names are unique per instance and everything is removed by {@link #close()}.
 */
public final class TwoHosts implements AutoCloseable {

    public static final String ADDRESS_A = "192.0.2.1";
    public static final String ADDRESS_B = "192.0.2.2";

    private final String nsA;
    private final String nsB;

    private TwoHosts(String tag) {
        this.nsA = "cohort-" + tag + "-a";
        this.nsB = "cohort-" + tag + "-b";
    }

    /** Why namespaces cannot be made here, or {@code null} when they can. */
    public static String unavailableReason() {
        if (!"root".equals(System.getProperty("user.name"))) {
            return "network namespaces need root (running as " + System.getProperty("user.name") + ")";
        }
        try {
            if (exec(List.of("ip", "netns", "list")) != 0) {
                return "`ip netns list` failed";
            }
        } catch (IOException e) {
            return "iproute2's `ip` is not installed (apt-get install -y iproute2)";
        }
        return null;
    }

    /**
     * As {@link #create()}, where namespaces can be made here; elsewhere the calling test is skipped
     * (a failed JUnit assumption) with {@link #unavailableReason()}.
     */
    public static TwoHosts createOrSkip() {
        String why = unavailableReason();
        Assumptions.assumeTrue(why == null, () -> "skipped: cannot create network namespaces here: " + why);
        return create();
    }

    /** Creates both namespaces and the link between them. */
    public static TwoHosts create() {
        String tag = Integer.toString(ThreadLocalRandom.current().nextInt(1 << 20), 36);
        TwoHosts hosts = new TwoHosts(tag);
        String vethA = "cva" + tag;
        String vethB = "cvb" + tag;
        try {
            run("ip", "netns", "add", hosts.nsA);
            run("ip", "netns", "add", hosts.nsB);
            run("ip", "link", "add", vethA, "type", "veth", "peer", "name", vethB);
            run("ip", "link", "set", vethA, "netns", hosts.nsA);
            run("ip", "link", "set", vethB, "netns", hosts.nsB);
            run("ip", "-n", hosts.nsA, "addr", "add", ADDRESS_A + "/24", "dev", vethA);
            run("ip", "-n", hosts.nsB, "addr", "add", ADDRESS_B + "/24", "dev", vethB);
            for (String[] nsDev : new String[][] {{hosts.nsA, vethA}, {hosts.nsB, vethB}}) {
                run("ip", "-n", nsDev[0], "link", "set", nsDev[1], "up");
                run("ip", "-n", nsDev[0], "link", "set", "lo", "up");
            }
            return hosts;
        } catch (RuntimeException e) {
            hosts.close();
            throw e;
        }
    }

    /** {@code command} run inside host 0 (A) or 1 (B). */
    public List<String> on(int host, List<String> command) {
        List<String> cmd = new ArrayList<>(List.of("ip", "netns", "exec", host == 0 ? nsA : nsB));
        cmd.addAll(command);
        return cmd;
    }

    public String address(int host) {
        return host == 0 ? ADDRESS_A : ADDRESS_B;
    }

    /** A port for rank 0's store on host A: {@code base} plus a share of this JVM's pid, so concurrent runs differ. */
    public static int port(int base) {
        return base + (int) (ProcessHandle.current().pid() % 500);
    }

    /**
     * Runs {@code command} as 4 ranks, 2 on each host (ranks 0 and 1 on A), within {@code limit},
     * each with the launch environment a launcher gives (MASTER_ADDR on A, RANK, WORLD_SIZE,
     * LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK) and {@code extra}; their outputs under {@code dir}.
     */
    public List<JvmWorkers.Result> runTwoByTwo(
            List<String> command, int port, Map<String, String> extra, Path dir, Duration limit) {
        return JvmWorkers.run(
                4,
                r -> on(r / 2, command),
                r -> {
                    Map<String, String> env = JvmWorkers.launchEnv(ADDRESS_A, port, r, 4, 2);
                    env.putAll(extra);
                    return env;
                },
                dir,
                limit);
    }

    /**
     * Runs the Java worker {@code main} with {@code args} as 4 ranks on two new hosts
     * ({@link #runTwoByTwo}, rank 0's store at {@link #port port(portBase)}, outputs under
     * {@code dir}), and checks that every rank ended OK printing {@code everyRankSays} and found its
     * host ({@link #assertTwoByTwo}). Skipped where the hosts cannot be made ({@link #createOrSkip()}).
     */
    public static void assertWorkersRunTwoByTwo(
            Class<?> main, List<String> args, int portBase, Path dir, Duration limit, String... everyRankSays) {
        List<JvmWorkers.Result> results;
        try (TwoHosts hosts = createOrSkip()) {
            results = hosts.runTwoByTwo(
                    JvmWorkers.javaCommand(main, List.of(), args), port(portBase), Map.of(), dir, limit);
        }
        JvmWorkers.assertAllOk(results, everyRankSays);
        assertTwoByTwo(results);
    }

    /** Checks that the 4 ranks of {@link #runTwoByTwo} (engine workers) found their hosts: ranks 2 and 3 form node 1. */
    public static void assertTwoByTwo(List<JvmWorkers.Result> results) {
        assertThat(results.get(2).output())
                .as(JvmWorkers.describe(results))
                .contains("TOPOLOGY Topology[rank=2, worldSize=4, localRank=0, localWorldSize=2, nodeRank=1]");
        assertThat(results.get(0).output()).contains("NODE 0 RANKS [0, 1]");
        assertThat(results.get(3).output()).contains("NODE 1 RANKS [2, 3]");
    }

    @Override
    public void close() {
        for (String ns : List.of(nsA, nsB)) {
            try {
                exec(List.of("ip", "netns", "del", ns));
            } catch (IOException e) {
                // nothing to remove
            }
        }
    }

    private static void run(String... command) {
        try {
            int rc = exec(List.of(command));
            if (rc != 0) {
                throw new IllegalStateException(String.join(" ", command) + " exited with " + rc);
            }
        } catch (IOException e) {
            throw new IllegalStateException(String.join(" ", command) + " failed: " + e.getMessage(), e);
        }
    }

    private static int exec(List<String> command) throws IOException {
        Process p = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .start();
        try {
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IOException(String.join(" ", command) + " did not finish within 30 s");
            }
            return p.exitValue();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
        }
    }
}
