package dev.cohort.launcher.control;

import dev.cohort.runtime.Daemons;
import dev.cohort.runtime.auth.AuthenticationException;
import dev.cohort.runtime.auth.Handshake;
import dev.cohort.runtime.auth.JobSecret;
import dev.cohort.runtime.auth.Refusals;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * Node 0's end of the control channel: every node's launcher (node 0's too) connects, says
 * HELLO, and then reports its rounds; the {@link Referee} decides and this server sends its
 * commands to every node. A node that does not join within the join timeout, or whose link
 * goes silent, ends the run on every node with a message that names it. With a job secret, a
 * connection must pass the {@link Handshake} before its first line is read. At most
 * {@link #UNPROVEN} connections at a time may be on their way to a HELLO; more are closed at once,
 * so a flood of strangers costs a bounded number of threads.
 */
public final class ControlServer implements AutoCloseable {

    /** What both ends name in the {@link Handshake}. */
    static final String PURPOSE = "cohort launcher control";

    static final Duration HANDSHAKE = Duration.ofSeconds(10);

    /** Connections that may be between accept and their HELLO's answer at once. */
    static final int UNPROVEN = 64;

    private final Semaphore unproven = new Semaphore(UNPROVEN);

    private final ServerSocket server;
    private final String runId;
    private final int nodes;
    private final int minNodes;
    private final String nodesSpec;
    private final Referee referee;
    private final Map<Integer, Wire> joined = new TreeMap<>();
    /** The JDK feature version each joined node runs its workers on, and how many workers it runs. */
    private final Map<Integer, Integer> jdks = new TreeMap<>();

    private final Map<Integer, Integer> workers = new TreeMap<>();
    /** Each joined node's address, as node 0 sees it: where an elastic generation's rank 0 on it listens. */
    private final Map<Integer, String> hosts = new TreeMap<>();
    /** An elastic run's generation store; null otherwise. */
    private final Generations generations;

    private final ScheduledExecutorService timer;
    private final Optional<JobSecret> secret;
    private final Refusals refusals;
    private boolean finished;
    /** Whether the run began (every node joined, or the join timeout passed with enough). */
    private boolean started;
    /** The job the run started with: its engine choice (the oldest JDK) holds for nodes that join later. */
    private Command.Job startedOn;

    /** {@code --nnodes} as a user writes it: "N", or "MIN:MAX" for a range. */
    public static String nodesSpec(int minNodes, int nodes) {
        return minNodes == nodes ? Integer.toString(nodes) : minNodes + ":" + nodes;
    }

    /**
     * Binds {@code host:port} (node 0's --master-addr, where the other nodes connect), before any
     * worker starts.
     *
     * @throws IllegalArgumentException when the port is taken or {@code host} is not an address of this host
     */
    public ControlServer(Channel channel, String runId, int minNodes, int nodes, int maxRestarts, int elastic) {
        String host = channel.host();
        int port = channel.port();
        Optional<JobSecret> secret = channel.secret();
        try {
            server = new ServerSocket();
            server.setReuseAddress(true);
            server.bind(new InetSocketAddress(java.net.InetAddress.getByName(host), port));
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot listen for the control channel on " + host + ":" + port + " ("
                    + e.getMessage()
                    + "); is the port taken (pick another --master-port, or set --control-port on every "
                    + "node), or is --master-addr not an address of node 0?");
        }
        this.runId = runId;
        this.secret = secret;
        this.refusals = new Refusals("control channel on port " + server.getLocalPort());
        this.nodes = nodes;
        this.minNodes = minNodes;
        this.nodesSpec = nodesSpec(minNodes, nodes);
        this.referee = new Referee(nodes, maxRestarts, elastic);
        try {
            this.generations = elastic > 0 ? Generations.open(host, secret) : null;
        } catch (RuntimeException e) {
            closeQuietly(server);
            throw e;
        }
        this.timer = Executors.newSingleThreadScheduledExecutor(Daemons.named("cohort-control-timer"));
        timer.scheduleAtFixedRate(this::ping, Wire.PING_MILLIS, Wire.PING_MILLIS, TimeUnit.MILLISECONDS);
        timer.schedule(this::joinDeadline, channel.joinTimeout().toMillis(), TimeUnit.MILLISECONDS);
        Daemons.start("cohort-control-accept", this::acceptLoop);
    }

    private static void closeQuietly(java.io.Closeable s) {
        try {
            s.close();
        } catch (IOException e) {
            // closing anyway
        }
    }

    public int port() {
        return server.getLocalPort();
    }

    private void acceptLoop() {
        while (!server.isClosed()) {
            try {
                Socket s = server.accept();
                if (unproven.tryAcquire()) {
                    Daemons.start("cohort-control-" + s.getRemoteSocketAddress(), () -> serve(s));
                } else {
                    refusals.refused(s.getRemoteSocketAddress(), UNPROVEN + " other connections await their HELLO");
                    closeQuietly(s);
                }
            } catch (IOException e) {
                // Closed, or a failed accept; the loop condition decides.
            }
        }
    }

    private void serve(Socket socket) {
        Wire wire = null;
        int node = -1;
        try {
            try {
                if (secret.isPresent()) {
                    Handshake.asServer(socket, secret.get(), PURPOSE, HANDSHAKE);
                }
                wire = new Wire(socket);
                node = hello(wire, wire.read());
            } finally {
                unproven.release();
            }
            if (node < 0) {
                wire.close();
                return;
            }
            String line;
            while ((line = wire.read()) != null) {
                onReport(Wire.parseReport(line, node));
            }
            lost(node, "it closed the connection");
        } catch (AuthenticationException e) {
            refusals.refused(socket.getRemoteSocketAddress(), e.getMessage());
            closeQuietly(socket);
        } catch (IOException | RuntimeException e) {
            if (node >= 0) {
                lost(
                        node,
                        e instanceof java.net.SocketTimeoutException
                                ? "silent for " + Wire.SILENCE_MILLIS / 1000 + " s"
                                : String.valueOf(e.getMessage()));
            } else {
                refusals.refused(socket.getRemoteSocketAddress(), "no HELLO (" + e.getMessage() + ")");
            }
            closeQuietly(socket);
        }
    }

    // Returns the node's rank, or -1 after telling the peer why it was refused.
    private int hello(Wire wire, String line) throws IOException {
        String[] f = line == null ? new String[0] : line.split(" ");
        String why;
        int node = -1;
        if (f.length != 6 || !f[0].equals("HELLO") || !f[5].matches("[0-9]{1,4}")) {
            why = "expected HELLO from a cohort launcher, got '"
                    + (line == null || line.length() <= 80 ? line : line.substring(0, 80) + "...") + "'";
        } else if (!f[1].equals(runId)) {
            why = "--run-id " + f[1] + " differs from node 0's --run-id " + runId;
        } else if (!f[3].equals(nodesSpec)) {
            why = "--nnodes " + f[3] + " differs from node 0's --nnodes " + nodesSpec;
        } else if (!f[4].matches("[1-9][0-9]{0,5}")) {
            why = "--nproc-per-node " + f[4] + " is not a positive number";
        } else {
            node = Integer.parseInt(f[2]);
            synchronized (this) {
                why = finished
                        ? "the run is already over"
                        : node < 0 || node >= nodes
                                ? "--node-rank " + node + " is not in [0, " + nodes + ")"
                                : joined.containsKey(node)
                                        ? "another launcher already joined as --node-rank " + node
                                        : null;
                if (why == null && started) {
                    int count = Integer.parseInt(f[4]);
                    Optional<Referee.Admission> admission = referee.onJoin(node, count);
                    if (admission.isEmpty()) {
                        why = "the run started without it and cannot take it now (--nnodes " + nodesSpec
                                + (nodes > minNodes ? "; its round is failing)" : ": not elastic)");
                    } else {
                        wire.send("OK");
                        joined.put(node, wire);
                        jdks.put(node, Integer.parseInt(f[5]));
                        workers.put(node, count);
                        hosts.put(node, wire.address());
                        broadcast(List.of(admission.get().regroup()));
                        wire.send(Wire.format(joinerJob(node, admission.get().firstRank())));
                        wire.send(Wire.format(new Command.Start(referee.round(), true)));
                        return node;
                    }
                }
                if (why == null) {
                    wire.send("OK");
                    joined.put(node, wire);
                    jdks.put(node, Integer.parseInt(f[5]));
                    workers.put(node, Integer.parseInt(f[4]));
                    hosts.put(node, wire.address());
                    if (joined.size() == nodes) {
                        begin();
                    }
                    return node;
                }
            }
        }
        refusals.refused(wire.peer(), why);
        wire.send("ERROR " + why);
        return -1;
    }

    /** The job as told to a node that joins the running round, its ranks from {@code firstRank}. */
    private Command.Job joinerJob(int node, int firstRank) {
        Command.Job job = job();
        List<Integer> first = new ArrayList<>(job.firstRanks());
        first.set(node, firstRank);
        return new Command.Job(
                startedOn.oldestJdk(), startedOn.node(), referee.ranksGiven(), first, job.elasticStore(), job.nodes());
    }

    /** Starts the run with the nodes joined so far. */
    private void begin() {
        started = true;
        List<Integer> perNode = new ArrayList<>();
        for (int n = 0; n < nodes; n++) {
            perNode.add(workers.getOrDefault(n, 0));
        }
        startedOn = job();
        broadcast(List.of(startedOn, referee.begin(perNode)));
    }

    /** The oldest JDK the nodes run their workers on (and the first node that runs it); the nodes' ranks, node by node. */
    private Command.Job job() {
        Map.Entry<Integer, Integer> oldest = null;
        for (Map.Entry<Integer, Integer> e : jdks.entrySet()) {
            if (oldest == null || e.getValue() < oldest.getValue()) {
                oldest = e;
            }
        }
        List<Integer> first = new ArrayList<>();
        int world = 0;
        for (int n = 0; n < nodes; n++) {
            first.add(world);
            world += workers.getOrDefault(n, 0);
        }
        return new Command.Job(
                oldest.getValue(),
                oldest.getKey(),
                world,
                first,
                generations == null ? "" : generations.address(),
                new ArrayList<>(workers.keySet()));
    }

    private synchronized void onReport(Report report) {
        broadcast(referee.onReport(report));
    }

    private synchronized void lost(int node, String why) {
        if (!finished) {
            joined.remove(node);
            Optional<List<Command>> goOn =
                    referee.onNodeLost(node, "lost contact with the launcher of node " + node + " (" + why + ")");
            if (goOn.isPresent()) {
                broadcast(goOn.get());
                return;
            }
            broadcast(List.of(new Command.Exit(
                    1, "lost contact with the launcher of node " + node + " (" + why + "); stopping every node")));
        }
    }

    private synchronized void joinDeadline() {
        if (!finished && !started && joined.size() >= minNodes && joined.containsKey(0)) {
            begin();
            return;
        }
        if (!finished && joined.size() < nodes) {
            List<Integer> missing = new ArrayList<>();
            for (int n = 0; n < nodes; n++) {
                if (!joined.containsKey(n)) {
                    missing.add(n);
                }
            }
            broadcast(List.of(new Command.Exit(
                    1,
                    "node(s) " + missing + " did not join within the join timeout"
                            + (minNodes < nodes
                                    ? " (--nnodes " + nodesSpec + " needs node 0 and " + minNodes + " nodes)"
                                    : "")
                            + "; "
                            + "start a launcher with the same --master-addr, --master-port and --run-id on each")));
        }
    }

    // Node 0 last: once it has the command it may close this server.
    private void broadcast(List<Command> commands) {
        for (Command c : commands) {
            if (c instanceof Command.Exit) {
                finished = true;
            }
            if (c instanceof Command.Regroup g) {
                generations.publish(g, hosts::get);
            }
            if (c instanceof Command.Start s && s.round() > 0 && startedOn != null) {
                // A restart starts every node that is in the run now, nodes that joined too: their ranks again.
                broadcast(List.of(job()));
            }
            List<Map.Entry<Integer, Wire>> order = new ArrayList<>(joined.entrySet());
            order.sort(Map.Entry.<Integer, Wire>comparingByKey(Comparator.reverseOrder()));
            for (Map.Entry<Integer, Wire> e : order) {
                try {
                    e.getValue().send(Wire.format(c));
                } catch (IOException ex) {
                    // Its reader thread sees the broken link and reports it.
                }
            }
        }
    }

    private synchronized void ping() {
        for (Wire w : joined.values()) {
            try {
                w.send("PING");
            } catch (IOException e) {
                // Its reader thread sees the broken link and reports it.
            }
        }
    }

    @Override
    public synchronized void close() {
        finished = true;
        timer.shutdownNow();
        try {
            server.close();
        } catch (IOException e) {
            // Already closed.
        }
        joined.values().forEach(Wire::close);
        joined.clear();
        if (generations != null) {
            generations.close();
        }
    }
}
