package dev.cohort.launcher;

import dev.cohort.api.LaunchEnvironment;
import dev.cohort.launcher.control.ControlServer;
import dev.cohort.runtime.auth.JobSecret;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * How to launch a group of workers on this node: the settings of {@code ./cohort run}, shared by
 * the command line and the Java API. Build with {@link #builder()}; {@link Builder#build()} fills
 * the defaults and rejects bad values and combinations with a message that names the option.
 *
 * @param nprocPerNode workers on this node (default 1)
 * @param nnodes       nodes in the group, at most (default 1)
 * @param nodeRank     this node's index in [0, nnodes) (default 0)
 * @param masterAddr   where rank 0 listens (default 127.0.0.1; required with more than one node)
 * @param masterPort   rank 0's port; 0 picks a free one on a single node (default 29500)
 * @param controlPort  port of node 0's control channel with more than one node (default masterPort + 1)
 * @param maxRestarts  how often the whole group is restarted after a failure (default 0)
 * @param runId        names the run; passed to workers as COHORT_RUN_ID (default "cohort")
 * @param logDir       where per-rank log files go besides the console; null for none (default)
 * @param grace        between SIGTERM and SIGKILL when stopping workers (default 5 s)
 * @param joinTimeout  how long nodes wait for each other to join (default 60 s)
 * @param environment  extra variables for every worker, applied before the launch contract
 * @param elastic      0, or the fewest workers an elastic run goes on with: a lost worker's
 *                     survivors re-form the group without a restart while at least this many live
 * @param minNodes     the fewest nodes the run starts with, when not all {@code nnodes} joined within
 *                     the join timeout ({@code --nnodes MIN:MAX}; default: {@code nnodes}); below
 *                     {@code nnodes}, the run is elastic (at least {@code minNodes * nprocPerNode}
 *                     workers unless {@code elastic} says otherwise)
 * @param secret       the job's secret, passed to every worker ({@code COHORT_SECRET}) and proved on
 *                     the control channel; empty: none (see docs/SECURITY.md)
 * @param bindCores    pin local worker r to its own share of the cores ({@code taskset}) when there
 *                     are no more workers than cores (default false): spinning engines such as shm
 *                     need each rank on its own core; Gloo's threads do better unpinned
 */
public record LaunchOptions(
        int nprocPerNode,
        int nnodes,
        int nodeRank,
        String masterAddr,
        int masterPort,
        int controlPort,
        int maxRestarts,
        String runId,
        Path logDir,
        Duration grace,
        Duration joinTimeout,
        Map<String, String> environment,
        boolean bindCores,
        int elastic,
        Optional<JobSecret> secret,
        int minNodes) {

    public static final int DEFAULT_MASTER_PORT = 29500;

    /**
     * The secret of a run over {@code nodes} nodes: {@code secretFile}'s, else the environment's
     * ({@value JobSecret#ENV} or {@value JobSecret#FILE_ENV}), else on one node a new one. Several
     * nodes without one are refused unless {@code insecureNoSecret} (then empty): a launcher cannot
     * hand a secret it made to the other nodes over the network the secret is meant to protect.
     *
     * @throws IllegalArgumentException saying how to give every node the same secret
     */
    public static Optional<JobSecret> secretFor(
            int nodes, Path secretFile, boolean insecureNoSecret, Map<String, String> env) {
        if (secretFile != null) {
            if (insecureNoSecret) {
                throw new IllegalArgumentException("--insecure-no-secret and --secret-file contradict; give one");
            }
            return Optional.of(JobSecret.read(secretFile));
        }
        Optional<JobSecret> given = JobSecret.from(env);
        if (given.isPresent()) {
            return given;
        }
        if (nodes == 1) {
            return Optional.of(JobSecret.generate());
        }
        if (!insecureNoSecret) {
            throw new IllegalArgumentException(
                    "a run over " + nodes + " nodes needs a job secret that every node shares, "
                            + "and a launcher cannot send one to the other nodes safely: make one with "
                            + "`(umask 077; openssl rand -hex 32 > job.secret)`, copy it to every node and pass "
                            + "--secret-file job.secret on each (or set " + JobSecret.ENV + " or " + JobSecret.FILE_ENV
                            + "); or, on a network you trust, pass --insecure-no-secret on each node");
        }
        return Optional.empty();
    }

    public static final String DEFAULT_MASTER_ADDR = "127.0.0.1";
    public static final Duration DEFAULT_JOIN_TIMEOUT = Duration.ofSeconds(60);

    public LaunchOptions {
        environment = Map.copyOf(environment);
    }

    public static Builder builder() {
        return new Builder();
    }

    /**
     * The world size if every node runs {@code nprocPerNode} workers. Across nodes the nodes may
     * run different numbers, and node 0 tells each launcher the real world and its ranks.
     */
    public int worldSize() {
        return nnodes * nprocPerNode;
    }

    /**
     * Global rank of local worker {@code localRank} if every node runs {@code nprocPerNode}
     * workers (see {@link #worldSize()}): nodes hold consecutive blocks of ranks.
     */
    public int globalRank(int localRank) {
        return nodeRank * nprocPerNode + localRank;
    }

    /** {@code --nnodes} as given: "N", or "MIN:MAX" for a range (every node must say the same). */
    public String nnodesSpec() {
        return ControlServer.nodesSpec(minNodes, nnodes);
    }

    /**
     * Reads {@code --nnodes}: "N" or "MIN:MAX"; returns {MIN, MAX} (MIN = MAX for "N").
     */
    public static int[] parseNodes(String text) {
        String t = text == null ? "" : text.trim();
        int colon = t.indexOf(':');
        if (colon < 0) {
            int n = parseCount("--nnodes", t, false);
            return new int[] {n, n};
        }
        int min = parseCount("--nnodes (MIN of MIN:MAX)", t.substring(0, colon), false);
        int max = parseCount("--nnodes (MAX of MIN:MAX)", t.substring(colon + 1), false);
        if (min < 1 || min > max) {
            throw new IllegalArgumentException("--nnodes " + t + " must be MIN:MAX with 1 <= MIN <= MAX");
        }
        return new int[] {min, max};
    }

    /**
     * Reads a count option: a non-negative integer, or {@code auto} (when allowed) for the
     * number of cores.
     */
    public static int parseCount(String option, String text, boolean autoAllowed) {
        String t = text == null ? "" : text.trim();
        if (autoAllowed && t.equalsIgnoreCase("auto")) {
            return Runtime.getRuntime().availableProcessors();
        }
        try {
            int n = Integer.parseInt(t);
            if (n < 0) {
                throw new IllegalArgumentException(option + " must not be negative, got " + text);
            }
            return n;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(
                    option + " must be a whole number" + (autoAllowed ? " or 'auto'" : "") + ", got '" + text + "'");
        }
    }

    /** Fluent settings; every property's default is given on {@link LaunchOptions}. */
    public static final class Builder {
        private int nprocPerNode = 1;
        private int nnodes = 1;
        private int nodeRank;
        private String masterAddr;
        private int masterPort = DEFAULT_MASTER_PORT;
        private int controlPort;
        private int maxRestarts;
        private String runId = LaunchEnvironment.DEFAULT_RUN_ID;
        private Path logDir;
        private boolean bindCores;
        private Duration grace = ProcessTreeKiller.DEFAULT_GRACE;
        private Duration joinTimeout = DEFAULT_JOIN_TIMEOUT;
        private final Map<String, String> environment = new LinkedHashMap<>();
        private Optional<JobSecret> secret = Optional.empty();
        private int elastic;
        private int minNodes;

        private Builder() {}

        public Builder nprocPerNode(int n) {
            this.nprocPerNode = n;
            return this;
        }

        public Builder nnodes(int n) {
            this.nnodes = n;
            this.minNodes = 0;
            return this;
        }

        /** Between {@code min} and {@code max} nodes ({@code --nnodes MIN:MAX}): see {@link LaunchOptions#minNodes()}. */
        public Builder nnodes(int min, int max) {
            this.nnodes = max;
            this.minNodes = min;
            return this;
        }

        public Builder nodeRank(int rank) {
            this.nodeRank = rank;
            return this;
        }

        public Builder masterAddr(String addr) {
            this.masterAddr = addr;
            return this;
        }

        public Builder masterPort(int port) {
            this.masterPort = port;
            return this;
        }

        public Builder controlPort(int port) {
            this.controlPort = port;
            return this;
        }

        public Builder maxRestarts(int n) {
            this.maxRestarts = n;
            return this;
        }

        public Builder runId(String id) {
            this.runId = id;
            return this;
        }

        public Builder bindCores(boolean bind) {
            this.bindCores = bind;
            return this;
        }

        public Builder logDir(Path dir) {
            this.logDir = dir;
            return this;
        }

        public Builder grace(Duration grace) {
            this.grace = grace;
            return this;
        }

        public Builder joinTimeout(Duration timeout) {
            this.joinTimeout = timeout;
            return this;
        }

        /** Elastic with at least {@code min} workers (default 0: not elastic). */
        public Builder elastic(int min) {
            this.elastic = min;
            return this;
        }

        /** The job's secret (default: none). */
        public Builder secret(Optional<JobSecret> secret) {
            this.secret = Objects.requireNonNull(secret, "secret");
            return this;
        }

        public Builder addEnvironment(String name, String value) {
            environment.put(Objects.requireNonNull(name, "name"), Objects.requireNonNull(value, "value"));
            return this;
        }

        /** @throws IllegalArgumentException naming the option that is wrong and how to fix it */
        public LaunchOptions build() {
            if (nprocPerNode < 1) {
                throw new IllegalArgumentException("--nproc-per-node must be at least 1, got " + nprocPerNode);
            }
            if (nnodes < 1) {
                throw new IllegalArgumentException("--nnodes must be at least 1, got " + nnodes);
            }
            if (nodeRank < 0 || nodeRank >= nnodes) {
                throw new IllegalArgumentException("--node-rank must be in [0, --nnodes=" + nnodes + "), got "
                        + nodeRank + "; number the nodes 0.." + (nnodes - 1));
            }
            if (masterPort < 0 || masterPort > 65535) {
                throw new IllegalArgumentException(
                        "--master-port must be in [1, 65535] (or 0 for a free port), got " + masterPort);
            }
            if (controlPort < 0 || controlPort > 65535) {
                throw new IllegalArgumentException(
                        "--control-port must be in [1, 65535] (or 0 for --master-port + 1), got " + controlPort);
            }
            if (maxRestarts < 0) {
                throw new IllegalArgumentException("--max-restarts must not be negative, got " + maxRestarts);
            }
            if (runId == null || !runId.matches("[A-Za-z0-9._-]{1,64}")) {
                throw new IllegalArgumentException(
                        "--run-id must be 1-64 characters of [A-Za-z0-9._-], got '" + runId + "'");
            }
            if (grace == null || grace.isNegative()) {
                throw new IllegalArgumentException("the grace period must not be negative, got " + grace);
            }
            if (joinTimeout == null || joinTimeout.isNegative() || joinTimeout.isZero()) {
                throw new IllegalArgumentException("the join timeout must be positive, got " + joinTimeout);
            }
            String addr = masterAddr;
            int control = controlPort;
            if (nnodes > 1) {
                if (addr == null || addr.isBlank()) {
                    throw new IllegalArgumentException(
                            "--nnodes " + nnodes + " needs --master-addr: the address of the "
                                    + "node with --node-rank 0, reachable from every node");
                }
                if (masterPort == 0) {
                    throw new IllegalArgumentException("--master-port 0 (a free port) works only with --nnodes 1; give "
                            + "every node the same --master-port");
                }
                if (control == 0) {
                    if (masterPort == 65535) {
                        throw new IllegalArgumentException("--master-port 65535 leaves no port for the control channel "
                                + "(--master-port + 1); pick a lower port or set --control-port");
                    }
                    control = masterPort + 1;
                }
                if (control == masterPort) {
                    throw new IllegalArgumentException("--control-port must differ from --master-port " + masterPort);
                }
            }
            if (addr == null || addr.isBlank()) {
                addr = DEFAULT_MASTER_ADDR;
            }
            if (logDir != null && java.nio.file.Files.exists(logDir) && !java.nio.file.Files.isDirectory(logDir)) {
                throw new IllegalArgumentException("--log-dir " + logDir + " exists and is not a directory");
            }
            int least = minNodes == 0 ? nnodes : minNodes;
            if (least < 1 || least > nnodes) {
                throw new IllegalArgumentException(
                        "--nnodes " + minNodes + ":" + nnodes + " must have 1 <= MIN <= MAX");
            }
            int elastic = this.elastic == 0 && least < nnodes ? least * nprocPerNode : this.elastic;
            if (elastic < 0 || elastic > (long) nprocPerNode * nnodes) {
                throw new IllegalArgumentException("--elastic " + elastic + " must be in [1, "
                        + (nnodes > 1
                                ? "--nnodes x --nproc-per-node = " + (long) nprocPerNode * nnodes
                                : "--nproc-per-node=" + nprocPerNode)
                        + "]: the fewest workers the run goes on with");
            }
            Map<String, String> env = new LinkedHashMap<>(environment);
            secret.ifPresent(k -> env.put(JobSecret.ENV, k.text()));
            return new LaunchOptions(
                    nprocPerNode,
                    nnodes,
                    nodeRank,
                    addr.trim(),
                    masterPort,
                    control,
                    maxRestarts,
                    runId,
                    logDir,
                    grace,
                    joinTimeout,
                    env,
                    bindCores,
                    elastic,
                    secret,
                    least);
        }
    }
}
