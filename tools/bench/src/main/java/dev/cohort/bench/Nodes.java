package dev.cohort.bench;

import dev.cohort.launcher.LaunchOptions;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/**
 * Where a benchmark's workers run (also {@code cohort doctor}'s allreduces): on this machine only (the default), or as node
 * {@code --node-rank} of {@code --nnodes}, started once per host like {@code cohort run}, so that
 * engines are measured across real hosts. {@code --world} stays the total number of ranks.
 */
public final class Nodes {

    @Option(names = "--world", description = "Ranks in all, over every node. Default: ${DEFAULT-VALUE}.")
    int world = 2;

    @Option(
            names = "--nnodes",
            description = "Hosts the ranks are spread over; start the same command on each, "
                    + "with its own --node-rank. Default: ${DEFAULT-VALUE}.")
    int nnodes = 1;

    @Option(
            names = "--node-rank",
            paramLabel = "K",
            description = "This host's index in [0, nnodes); node 0 runs "
                    + "rank 0, writes --json and prints the table. Default: ${DEFAULT-VALUE}.")
    int nodeRank = 0;

    @Option(
            names = "--master-addr",
            paramLabel = "HOST",
            description = "Address of node 0, as the other hosts reach it " + "(required with --nnodes > 1).")
    String masterAddr;

    @Option(
            names = "--master-port",
            paramLabel = "PORT",
            description = "Rank 0's port (required with --nnodes > 1; "
                    + "the launchers' control channel uses the next one).")
    int masterPort;

    @Option(
            names = "--secret-file",
            paramLabel = "FILE",
            description = "The job's secret, the same file on every host (required with --nnodes > 1 "
                    + "unless COHORT_SECRET or COHORT_SECRET_FILE is set, or --insecure-no-secret).")
    Path secretFile;

    @Option(
            names = "--insecure-no-secret",
            description = "Run across hosts without a secret: every process that reaches the ports is trusted.")
    boolean insecureNoSecret;

    /** Variables the workers get beside the launch contract's ({@code cohort doctor} sets some). */
    @Option(names = "--worker-env", paramLabel = "NAME=VALUE", hidden = true)
    java.util.Map<String, String> environment = new java.util.TreeMap<>();

    /** Gives the workers {@code name}={@code value}. */
    public Nodes environment(String name, String value) {
        environment.put(name, value);
        return this;
    }

    /** {@code --nnodes}. */
    public int nnodes() {
        return nnodes;
    }

    /** {@code --master-addr}, or null. */
    public String masterAddr() {
        return masterAddr;
    }

    /** These options as a command line, for a benchmark run on their behalf. */
    public java.util.List<String> asArgs() {
        java.util.List<String> args = new java.util.ArrayList<>(java.util.List.of(
                "--world",
                Integer.toString(world),
                "--nnodes",
                Integer.toString(nnodes),
                "--node-rank",
                Integer.toString(nodeRank)));
        if (masterAddr != null) {
            args.addAll(java.util.List.of("--master-addr", masterAddr));
        }
        if (masterPort > 0) {
            args.addAll(java.util.List.of("--master-port", Integer.toString(masterPort)));
        }
        if (secretFile != null) {
            args.addAll(java.util.List.of("--secret-file", secretFile.toString()));
        }
        if (insecureNoSecret) {
            args.add("--insecure-no-secret");
        }
        environment.forEach((name, value) -> args.add("--worker-env=" + name + "=" + value));
        return args;
    }

    /** {@code --world}, checked. */
    public int world() {
        if (world < 1) {
            throw new IllegalArgumentException("--world must be >= 1, got " + world);
        }
        return world;
    }

    /** This node's workers out of {@code world}, after checking the options together. */
    public int workersHere(int world) {
        if (nnodes < 1 || nodeRank < 0 || nodeRank >= nnodes) {
            throw new IllegalArgumentException(
                    "--node-rank must be in [0, --nnodes); got --node-rank " + nodeRank + " with --nnodes " + nnodes);
        }
        if (nnodes == 1) {
            return world;
        }
        if (world % nnodes != 0) {
            throw new IllegalArgumentException("--world " + world + " does not split evenly over --nnodes " + nnodes
                    + "; give each host the same number of ranks");
        }
        if (masterAddr == null || masterPort <= 0) {
            throw new IllegalArgumentException("--nnodes " + nnodes + " needs --master-addr and --master-port "
                    + "(node 0's address and a free port, the same on every host)");
        }
        return world / nnodes;
    }

    /** Whether this node prints the results (rank 0 lives on node 0 and writes them). */
    public boolean reports() {
        return nodeRank == 0;
    }

    /** The launcher's options for this node's share of {@code world}. */
    LaunchOptions.Builder launchOptions(int world) {
        LaunchOptions.Builder options = LaunchOptions.builder()
                .nprocPerNode(workersHere(world))
                .secret(LaunchOptions.secretFor(nnodes, secretFile, insecureNoSecret, System.getenv()));
        environment.forEach(options::addEnvironment);
        if (nnodes == 1) {
            return options.masterPort(0);
        }
        return options.nnodes(nnodes).nodeRank(nodeRank).masterAddr(masterAddr).masterPort(masterPort);
    }
}
