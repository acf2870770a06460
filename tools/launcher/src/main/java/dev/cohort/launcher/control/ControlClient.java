package dev.cohort.launcher.control;

import dev.cohort.runtime.Daemons;
import dev.cohort.runtime.auth.AuthenticationException;
import dev.cohort.runtime.auth.Handshake;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * A node launcher's end of the control channel to node 0's {@link ControlServer}. Connecting is
 * retried until the join timeout, so nodes may start in any order. Once joined, a lost or silent
 * link becomes {@link Command.Exit} with code 1 and a message that says so.
 */
public final class ControlClient implements Coordinator {

    private final Channel channel;
    private final String hello;
    private volatile boolean closed;
    /** The link to node 0, once {@link #open} joined. */
    private Wire wire;

    private Consumer<Command> commands;
    private ScheduledExecutorService pinger;
    /** The elastic run's generation store, as node 0's JOB said. */
    private volatile String elasticStore = "";

    /** Joins {@code channel} as node {@code node} of {@code nodes} ({@code --nnodes}) with {@code nprocPerNode} workers. */
    public ControlClient(Channel channel, String runId, int node, String nodes, int nprocPerNode) {
        this.channel = channel;
        // The workers run on this JVM's JDK (WorkerProgram uses java.home).
        this.hello = "HELLO " + runId + " " + node + " " + nodes + " " + nprocPerNode + " "
                + Runtime.version().feature();
    }

    /**
     * Connects to node 0 and joins.
     *
     * @throws IOException saying where it tried to connect, when node 0 cannot be reached within the
     *                     join timeout or refuses this node
     */
    @Override
    public void open(Consumer<Command> commands) throws IOException {
        this.commands = commands;
        long deadline = System.nanoTime() + channel.joinTimeout().toNanos();
        IOException last = null;
        while (System.nanoTime() < deadline
                && !closed
                && !Thread.currentThread().isInterrupted()) {
            Socket s = new Socket();
            try {
                s.connect(new InetSocketAddress(channel.host(), channel.port()), Channel.CONNECT_MILLIS);
                if (channel.secret().isPresent()) {
                    Handshake.asClient(s, channel.secret().get(), ControlServer.PURPOSE, ControlServer.HANDSHAKE);
                }
                wire = new Wire(s);
                break;
            } catch (AuthenticationException e) {
                s.close();
                throw new IOException("node 0's control channel at " + channel.where() + " failed authentication: "
                        + e.getMessage() + "; give every node the same --secret-file (or COHORT_SECRET)");
            } catch (IOException e) {
                last = e;
                s.close();
                sleep(Channel.RETRY_MILLIS);
            }
        }
        if (wire == null) {
            throw new IOException(
                    "cannot reach node 0's control channel at " + channel.where() + " within "
                            + channel.joinTimeout().toSeconds() + " s (" + (last == null ? "closed" : last.getMessage())
                            + "); is the "
                            + "--node-rank 0 launcher running, and is --master-addr an address of it that this host can reach?");
        }
        wire.send(hello);
        String reply;
        try {
            reply = wire.read();
        } catch (SocketTimeoutException e) {
            reply = null;
        }
        if (reply == null || !reply.equals("OK")) {
            wire.close();
            throw new IOException("node 0 at " + channel.where() + " refused this node: "
                    + (reply == null ? "no answer" : reply.replaceFirst("^ERROR ", "")));
        }
        pinger = Executors.newSingleThreadScheduledExecutor(Daemons.named("cohort-control-ping"));
        pinger.scheduleAtFixedRate(() -> send("PING"), Wire.PING_MILLIS, Wire.PING_MILLIS, TimeUnit.MILLISECONDS);
        Thread reader = Daemons.thread("cohort-control-client", this::readLoop);
        reader.start();
    }

    private void readLoop() {
        String why;
        try {
            String line;
            while ((line = wire.read()) != null) {
                Command c = Wire.parseCommand(line);
                if (c instanceof Command.Job job) {
                    elasticStore = job.elasticStore();
                }
                commands.accept(c);
            }
            why = "node 0 closed the connection";
        } catch (SocketTimeoutException e) {
            why = "node 0 was silent for " + Wire.SILENCE_MILLIS / 1000 + " s";
        } catch (IOException | RuntimeException e) {
            why = String.valueOf(e.getMessage());
        }
        lost(why);
    }

    @Override
    public String elasticStore() {
        return elasticStore;
    }

    @Override
    public void report(Report report) {
        send(Wire.format(report));
    }

    private void send(String line) {
        try {
            wire.send(line);
        } catch (IOException e) {
            lost(e.getMessage());
        }
    }

    private void lost(String why) {
        if (!closed) {
            commands.accept(new Command.Exit(
                    1,
                    "lost contact with node 0's launcher at " + channel.where() + " (" + why
                            + "); stopped this node's workers"));
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        closed = true;
        if (pinger != null) {
            pinger.shutdownNow();
        }
        if (wire != null) {
            wire.close();
        }
    }
}
