package dev.cohort.dist;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.cohort.api.BackendUnavailableException;
import dev.cohort.api.Backends;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.LaunchEnvironment;
import dev.cohort.bench.BenchMain;
import dev.cohort.bench.Nodes;
import dev.cohort.libtorch.LibTorch;
import dev.cohort.runtime.auth.JobSecret;
import dev.cohort.runtime.flight.ClockOffsets;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code cohort doctor}: what a long run needs of this host, checked before it starts — the JDK,
 * {@code /dev/shm}, libtorch and the OpenBLAS it computes with, the network the ranks will dial,
 * the job secret — and then a real allreduce on each engine that can run here, through the
 * launcher as a job would run it ({@code cohort bench collectives}). Each finding is ok, a note,
 * or a problem that says what to do; the exit status is 1 when there is a problem.
 */
@Command(
        name = "doctor",
        description = {
            "Checks this host for Cohort: the JDK, /dev/shm, libtorch and its OpenBLAS, the network and the job "
                    + "secret; then runs a real allreduce on each engine that can run here.",
            "Exit status 0 when nothing is wrong, 1 naming each problem and what to do."
        })
final class DoctorCommand implements Callable<Integer> {

    /** The engines tried when none are named: those a job on one host may run. */
    static final List<String> DEFAULT_ENGINES = List.of("gloo", "tcp", "shm", "mpi");
    /** The engines tried across hosts ({@code --nnodes} above 1) when none are named. */
    static final List<String> ACROSS_HOSTS = List.of("gloo", "tcp", "hier");
    /** The variables that name the interface an engine listens on. */
    static final Map<String, String> INTERFACE_VARIABLES =
            Map.of("GLOO_SOCKET_IFNAME", "gloo and hier", "COHORT_TCP_IFNAME", "tcp");

    static final String NATIVE_ACCESS = "--enable-native-access=";
    static final String NIO_OPENS = "--add-opens=java.base/java.nio=ALL-UNNAMED";

    /** Below this much room in /dev/shm the shm engine's slots and arenas do not fit. */
    static final long SHM_MINIMUM = 64L << 20;
    /** Each rank's arena by default (the shm engine's --shm-arena-mib), for the torch integration's buckets. */
    static final long SHM_ARENA = 256L << 20;

    enum Level {
        OK,
        NOTE,
        PROBLEM
    }

    record Finding(String topic, Level level, String text) {}

    @Spec
    CommandSpec spec;

    @Option(
            names = "--backend",
            split = ",",
            paramLabel = "ENGINE",
            description = "The engines to try (default: gloo, tcp, shm and mpi, those that can run here); "
                    + "one named here that cannot run is a problem.")
    List<String> engines;

    /** Where the allreduces run: this host (the default), or node {@code --node-rank} of {@code --nnodes}. */
    @Mixin
    Nodes nodes = new Nodes();

    @Option(names = "--size", description = "Size of each allreduce, e.g. 64K or 1M (default: ${DEFAULT-VALUE}).")
    String size = "1M";

    @Option(
            names = "--timeout",
            paramLabel = "SECONDS",
            description = "How long an engine may take to connect, and each collective (default: ${DEFAULT-VALUE}).")
    int timeoutSeconds = 20;

    private final List<Finding> findings = new ArrayList<>();

    @Override
    public Integer call() {
        int world = nodes.world();
        nodes.workersHere(world); // the node options, checked together before anything runs
        PrintWriter out = spec.commandLine().getOut();
        jdk();
        sharedMemory();
        libtorch();
        network();
        secret();
        for (Finding f : findings) {
            out.printf("%-8s %-10s %s%n", f.level(), f.topic(), f.text());
        }
        out.printf(
                "%nengines: an allreduce of %s on %d ranks each, through the launcher%s%n",
                size, world, nodes.nnodes() == 1 ? "" : ", across " + nodes.nnodes() + " hosts");
        out.flush();
        int before = findings.size();
        engines();
        for (Finding f : findings.subList(before, findings.size())) {
            out.printf("%-8s %-10s %s%n", f.level(), f.topic(), f.text());
        }
        List<Finding> problems =
                findings.stream().filter(f -> f.level() == Level.PROBLEM).toList();
        out.println();
        out.println(
                problems.isEmpty()
                        ? "no problems found"
                        : problems.size() + " problem(s): "
                                + problems.stream().map(Finding::topic).collect(Collectors.joining(", ")));
        out.flush();
        return problems.isEmpty() ? 0 : 1;
    }

    private void add(String topic, Level level, String text) {
        findings.add(new Finding(topic, level, text));
    }

    private void jdk() {
        String jvm = "Java " + Runtime.version() + " (" + System.getProperty("java.vendor") + ") at "
                + System.getProperty("java.home");
        if (Runtime.version().feature() < 22) {
            add("jdk", Level.NOTE, jvm + "; the shm, hier and mpi engines need JDK 22 or newer");
        } else {
            add("jdk", Level.OK, jvm);
        }
        flags(ManagementFactory.getRuntimeMXBean().getInputArguments());
    }

    /** The flags this JVM runs with, which {@code cohort run} gives its workers too. */
    private void flags(List<String> flags) {
        List<String> missing = new ArrayList<>();
        if (Runtime.version().feature() >= 22 && flags.stream().noneMatch(f -> f.startsWith(NATIVE_ACCESS))) {
            missing.add(NATIVE_ACCESS + "ALL-UNNAMED (the shm, hier and mpi engines call native code through the "
                    + "FFM API: without it the JVM warns, and a later JDK refuses)");
        }
        if (flags.stream().noneMatch(f -> f.equals(NIO_OPENS) || f.equals("java.base/java.nio=ALL-UNNAMED"))) {
            missing.add(NIO_OPENS + " (Arrow IPC files cannot be read without it)");
        }
        String given = flags.stream()
                .filter(f -> f.startsWith("--") || f.startsWith("-Xm") || f.startsWith("-XX:"))
                .collect(Collectors.joining(" "));
        if (missing.isEmpty()) {
            add("flags", Level.OK, given.isEmpty() ? "(none)" : given);
        } else {
            add(
                    "flags",
                    Level.NOTE,
                    "this JVM and the workers cohort run starts lack " + String.join("; and ", missing)
                            + "; the cohort command sets them unless COHORT_JAVA_OPTS says otherwise");
        }
    }

    private void sharedMemory() {
        Path dir = Path.of("/dev/shm");
        if (!Files.isDirectory(dir)) {
            add(
                    "/dev/shm",
                    Level.PROBLEM,
                    "missing: the shm and hier engines cannot run; mount a tmpfs there, or " + "use tcp or gloo");
            return;
        }
        try {
            FileStore store = Files.getFileStore(dir);
            long free = store.getUsableSpace();
            String room = mib(free) + " free of " + mib(store.getTotalSpace()) + " (" + store.type() + ")";
            if (free < SHM_MINIMUM) {
                add(
                        "/dev/shm",
                        Level.PROBLEM,
                        room + ": too little for the shm engine; give it at least "
                                + mib(SHM_MINIMUM)
                                + " (Docker: --shm-size=1g; Kubernetes: an emptyDir of medium Memory "
                                + "at /dev/shm), or use tcp");
            } else if (free < nodes.world() * SHM_ARENA) {
                add(
                        "/dev/shm",
                        Level.NOTE,
                        room + ": less than the " + mib(nodes.world() * SHM_ARENA) + " that " + nodes.world()
                                + " ranks' arenas may take (torch's gradient buckets, --shm-arena-mib); buckets that do not "
                                + "fit are copied instead");
            } else {
                add("/dev/shm", Level.OK, room);
            }
        } catch (IOException e) {
            add("/dev/shm", Level.PROBLEM, "unreadable: " + e.getMessage());
        }
    }

    private void libtorch() {
        try {
            LibTorch.load();
            add("libtorch", Level.OK, "JavaCPP's libtorch loads; computes with " + LibTorch.blas());
        } catch (BackendUnavailableException e) {
            add("libtorch", Level.PROBLEM, e.getMessage());
        }
    }

    private void network() {
        try {
            InetAddress self = InetAddress.getLocalHost();
            String up = upInterfaces();
            if (self.isLoopbackAddress()) {
                add(
                        "network",
                        Level.NOTE,
                        "host name " + self.getHostName() + " resolves to " + self.getHostAddress()
                                + " (loopback): other hosts cannot dial it by name; ranks listen on the interface towards "
                                + "MASTER_ADDR; interfaces up: " + up);
            } else {
                add(
                        "network",
                        Level.OK,
                        "host " + self.getHostName() + " at " + self.getHostAddress() + "; interfaces up: " + up);
            }
        } catch (IOException e) {
            add(
                    "network",
                    Level.PROBLEM,
                    "this host's name does not resolve (" + e.getMessage() + "); fix " + "/etc/hosts or DNS");
        }
        for (Map.Entry<String, String> v : INTERFACE_VARIABLES.entrySet()) {
            String name = System.getenv(v.getKey());
            if (name == null || name.isBlank()) {
                continue;
            }
            if (!isUp(name)) {
                add(
                        "network",
                        Level.PROBLEM,
                        v.getKey() + "=" + name + " names no interface that is up here ("
                                + v.getValue() + " would fail to listen); name one of: " + upInterfaces()
                                + ", or unset it");
            } else {
                add("network", Level.OK, v.getKey() + "=" + name + ": up");
            }
        }
        String master = nodes.masterAddr() != null ? nodes.masterAddr() : System.getenv(LaunchEnvironment.MASTER_ADDR);
        if (master != null && !master.isBlank()) {
            try (DatagramSocket probe = new DatagramSocket()) {
                probe.connect(new InetSocketAddress(InetAddress.getByName(master.trim()), 9));
                add(
                        "network",
                        Level.OK,
                        "node 0 at " + master + " resolves; the others will dial this host at "
                                + probe.getLocalAddress().getHostAddress());
            } catch (IOException e) {
                add(
                        "network",
                        Level.PROBLEM,
                        "node 0 at " + master + " cannot be reached from here (" + e.getMessage()
                                + "); give rank 0's address (--master-addr or MASTER_ADDR), the same on every host");
            }
        }
    }

    private static boolean isUp(String name) {
        try {
            NetworkInterface nic = NetworkInterface.getByName(name);
            return nic != null && nic.isUp();
        } catch (SocketException e) {
            return false;
        }
    }

    private static String upInterfaces() {
        try {
            return NetworkInterface.networkInterfaces()
                    .filter(DoctorCommand::up)
                    .map(n -> n.getName()
                            + n.inetAddresses()
                                    .filter(a -> !a.isLinkLocalAddress())
                                    .map(a -> a.getHostAddress().replaceFirst("%.*", ""))
                                    .collect(Collectors.joining(" ", " (", ")")))
                    .sorted()
                    .collect(Collectors.joining(", "));
        } catch (SocketException e) {
            return "(unreadable: " + e.getMessage() + ")";
        }
    }

    private static boolean up(NetworkInterface nic) {
        try {
            return nic.isUp();
        } catch (SocketException e) {
            return false;
        }
    }

    private void secret() {
        try {
            if (JobSecret.ofProcess().isPresent()) {
                add("secret", Level.OK, "a job secret is set (" + JobSecret.ENV + " or " + JobSecret.FILE_ENV + ")");
            } else {
                add(
                        "secret",
                        Level.NOTE,
                        "no job secret: any process that reaches MASTER_PORT may join a job; "
                                + "cohort run makes one for each job, or set " + JobSecret.FILE_ENV);
            }
        } catch (RuntimeException e) {
            add("secret", Level.PROBLEM, e.getMessage());
        }
    }

    /** An offset over this between hosts is worth a note: logs and file times disagree by as much. */
    static final double CLOCK_NOTE_MS = 100;

    /** The offsets the ranks of this host logged, by rank, in the first engine run that logged any. */
    private final Map<Integer, String> clocks = new java.util.TreeMap<>();

    private void engines() {
        if (nodes.nnodes() > 1) {
            nodes.environment(ClockOffsets.ENV_CHECK, "1");
        }
        enginesTried();
        clocks();
    }

    /** Across hosts, how far this host's ranks' clocks stand from rank 0's. */
    private void clocks() {
        if (nodes.nnodes() == 1) {
            return;
        }
        if (clocks.isEmpty()) {
            add(
                    "clock",
                    Level.NOTE,
                    nodes.reports()
                            ? "rank 0 runs here: the other hosts' doctors say how far their clocks stand from this one's"
                            : "not measured: no engine's ranks connected across the hosts");
            return;
        }
        double worst = 0;
        for (String line : clocks.values()) {
            java.util.regex.Matcher m = ClockOffsets.DESCRIBED.matcher(line);
            if (m.find()) {
                worst = Math.max(worst, Math.abs(Double.parseDouble(m.group(2))));
            }
        }
        String all = String.join("; ", clocks.values());
        if (worst > CLOCK_NOTE_MS) {
            add(
                    "clock",
                    Level.NOTE,
                    all + ": cohort trace takes it out of the timeline, but logs and file times "
                            + "across the hosts disagree by as much; keep the clocks in step (chrony or another NTP client)");
        } else {
            add("clock", Level.OK, all);
        }
    }

    private void enginesTried() {
        Map<String, DistributedBackend> here = Backends.discover();
        boolean named = engines != null;
        for (String raw : named ? engines : nodes.nnodes() > 1 ? ACROSS_HOSTS : DEFAULT_ENGINES) {
            String name = raw.trim().toLowerCase(Locale.ROOT);
            DistributedBackend engine = here.get(name);
            if (engine == null) {
                add(
                        name,
                        named ? Level.PROBLEM : Level.NOTE,
                        "not on the class path (engines here: " + String.join(", ", here.keySet()) + ")");
            } else if (!engine.isAvailable()) {
                add(name, named ? Level.PROBLEM : Level.NOTE, "cannot run here: " + engine.unavailableReason());
            } else {
                allreduce(name);
            }
        }
    }

    /** One engine's real allreduce, run as {@code cohort bench collectives} runs it; its output kept for a failure. */
    private void allreduce(String engine) {
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        PrintStream stdout = System.out;
        PrintStream stderr = System.err;
        try {
            Path json = Files.createTempFile("cohort-doctor-" + engine, ".json");
            int rc;
            List<String> args = new ArrayList<>(List.of("collectives", "--backend", engine));
            args.addAll(nodes.asArgs());
            args.addAll(List.of(
                    "--sizes",
                    size,
                    "--warmup-ms",
                    "300",
                    "--json",
                    json.toString(),
                    "--no-chart",
                    "--engine-option=--" + engine + "-connect-timeout=" + timeoutSeconds,
                    "--engine-option=--" + engine + "-timeout=" + timeoutSeconds));
            try (PrintStream capture = new PrintStream(log, true, StandardCharsets.UTF_8)) {
                System.setOut(capture);
                System.setErr(capture);
                rc = BenchMain.command().execute(args.toArray(String[]::new));
            } finally {
                System.setOut(stdout);
                System.setErr(stderr);
            }
            if (clocks.isEmpty()) {
                java.util.regex.Matcher m = ClockOffsets.DESCRIBED.matcher(log.toString(StandardCharsets.UTF_8));
                while (m.find()) {
                    clocks.put(Integer.parseInt(m.group(1)), m.group());
                }
            }
            if (rc != 0) {
                add(engine, Level.PROBLEM, "the allreduce failed (exit " + rc + "): " + why(log));
                return;
            }
            if (!nodes.reports()) {
                Files.deleteIfExists(json);
                add(engine, Level.OK, "works: this host's ranks took part (node 0 reports the time)");
                return;
            }
            JsonNode allreduce = null;
            for (JsonNode row : new ObjectMapper().readTree(json.toFile()).path("results")) {
                if (row.path("op").asText().equals("allreduce")) {
                    allreduce = row;
                }
            }
            Files.deleteIfExists(json);
            if (allreduce == null) {
                add(engine, Level.PROBLEM, "ran, but reported no allreduce: " + why(log));
                return;
            }
            add(
                    engine,
                    Level.OK,
                    String.format(
                            Locale.ROOT,
                            "works: %.3f ms, %.2f GB/s bus bandwidth",
                            allreduce.path("median_s").asDouble() * 1e3,
                            allreduce.path("busbw_gbs").asDouble()));
        } catch (IOException | RuntimeException e) {
            add(engine, Level.PROBLEM, "the allreduce could not run: " + e.getMessage() + "; " + why(log));
        }
    }

    /**
     * What a failed run's output says of why: the last lines of the rank that failed, as the
     * launcher quotes them, else the lines that name an error, else its last line.
     */
    private static String why(ByteArrayOutputStream log) {
        List<String> lines = log.toString(StandardCharsets.UTF_8)
                .lines()
                .map(String::strip)
                .filter(l -> !l.isEmpty() && !l.startsWith("at ") && !l.startsWith("WARNING:"))
                .toList();
        List<String> quoted = lines.stream()
                .filter(l -> l.startsWith("| "))
                .map(l -> l.substring(2).strip())
                .filter(l -> !l.startsWith("see ") && !l.startsWith("at "))
                .distinct()
                .limit(3)
                .toList();
        if (!quoted.isEmpty()) {
            return String.join(" | ", quoted);
        }
        List<String> errors = lines.stream()
                .filter(l -> l.contains("Exception") || l.contains("rror") || l.contains("failed"))
                .distinct()
                .limit(3)
                .toList();
        if (!errors.isEmpty()) {
            return String.join(" | ", errors);
        }
        return lines.isEmpty() ? "(no output)" : lines.get(lines.size() - 1);
    }

    private static String mib(long bytes) {
        return String.format(Locale.ROOT, bytes < (10L << 20) ? "%.1f MiB" : "%.0f MiB", bytes / 1048576.0);
    }
}
