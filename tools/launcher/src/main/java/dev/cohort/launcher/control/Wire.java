package dev.cohort.launcher.control;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/**
 * One end of the control channel: a line of UTF-8 text per message, words separated by spaces,
 * the last field (a message) may contain spaces. Both ends send {@code PING} every
 * {@link #PING_MILLIS}; a read that sees nothing for {@link #SILENCE_MILLIS} means the peer is gone.
 * A line longer than {@link #MAX_LINE_BYTES} is not Cohort's: the read fails.
 *
 * <pre>
 * node → node 0: HELLO runId node nnodes nprocPerNode jdk | DONE r | FAILED r code summary | STOPPED r
 *                 | LOST r rank code summary | PING
 * node 0 → node: OK | ERROR message | JOB oldestJdk node worldSize first0,first1,... store|- node,node,...
 *                 | START r [join] | STOP r
 *                 | REGROUP r generation rank:node,... why | EXIT code message | PING
 * </pre>
 */
final class Wire implements AutoCloseable {

    static final int PING_MILLIS = 1000;
    static final int SILENCE_MILLIS = 10_000;
    static final int MAX_LINE_BYTES = 64 * 1024;

    private final Socket socket;
    private final InputStream in;
    private final OutputStream out;

    Wire(Socket socket) throws IOException {
        this.socket = socket;
        socket.setSoTimeout(SILENCE_MILLIS);
        socket.setTcpNoDelay(true);
        this.in = new BufferedInputStream(socket.getInputStream());
        this.out = socket.getOutputStream();
    }

    /** The next message other than PING; null at end of stream. */
    String read() throws IOException {
        String line;
        do {
            line = readLine();
        } while (line != null && line.equals("PING"));
        return line;
    }

    /** The next line without its newline; null at end of stream. */
    private String readLine() throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        int b;
        while ((b = in.read()) >= 0 && b != '\n') {
            if (line.size() == MAX_LINE_BYTES) {
                throw new IOException("a line longer than " + MAX_LINE_BYTES + " bytes: not a cohort launcher");
            }
            line.write(b);
        }
        return b < 0 && line.size() == 0 ? null : line.toString(StandardCharsets.UTF_8);
    }

    synchronized void send(String line) throws IOException {
        out.write((line.replace('\n', ' ') + "\n").getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    /** The peer's IP address. */
    String address() {
        return socket.getInetAddress().getHostAddress();
    }

    String peer() {
        return String.valueOf(socket.getRemoteSocketAddress());
    }

    static Command parseCommand(String line) {
        String[] f = line.split(" ", 3);
        switch (f[0]) {
            case "JOB": {
                String[] j = line.split(" ");
                List<Integer> first = new ArrayList<>();
                for (String r : j[4].split(",")) {
                    first.add(Integer.parseInt(r));
                }
                List<Integer> nodes = new ArrayList<>();
                for (String n : j[6].split(",")) {
                    nodes.add(Integer.parseInt(n));
                }
                return new Command.Job(
                        Integer.parseInt(j[1]),
                        Integer.parseInt(j[2]),
                        Integer.parseInt(j[3]),
                        first,
                        j[5].equals("-") ? "" : j[5],
                        nodes);
            }
            case "REGROUP": {
                String[] g = line.split(" ", 5);
                List<Command.Member> members = new ArrayList<>();
                for (String m : g[3].split(",")) {
                    String[] rn = m.split(":");
                    members.add(new Command.Member(Integer.parseInt(rn[0]), Integer.parseInt(rn[1])));
                }
                return new Command.Regroup(
                        Integer.parseInt(g[1]), Integer.parseInt(g[2]), members, g.length > 4 ? g[4] : "");
            }
            case "START":
                return new Command.Start(Integer.parseInt(f[1]), f.length > 2 && f[2].equals("join"));
            case "STOP":
                return new Command.Stop(Integer.parseInt(f[1]));
            case "EXIT":
                return new Command.Exit(Integer.parseInt(f[1]), f.length > 2 ? f[2] : "");
            default:
                throw new IllegalArgumentException("unknown control command '" + line + "'");
        }
    }

    static String format(Command c) {
        if (c instanceof Command.Job j) {
            return "JOB " + j.oldestJdk() + " " + j.node() + " " + j.worldSize() + " "
                    + j.firstRanks().stream().map(String::valueOf).collect(Collectors.joining(",")) + " "
                    + (j.elasticStore().isEmpty() ? "-" : j.elasticStore()) + " "
                    + j.nodes().stream().map(String::valueOf).collect(Collectors.joining(","));
        } else if (c instanceof Command.Regroup g) {
            return "REGROUP " + g.round() + " " + g.generation() + " "
                    + g.members().stream().map(m -> m.rank() + ":" + m.node()).collect(Collectors.joining(","))
                    + " " + g.why();
        } else if (c instanceof Command.Start s) {
            return "START " + s.round() + (s.join() ? " join" : "");
        } else if (c instanceof Command.Stop s) {
            return "STOP " + s.round();
        }
        Command.Exit e = (Command.Exit) c;
        return "EXIT " + e.code() + " " + e.message();
    }

    static Report parseReport(String line, int node) {
        String[] f = line.split(" ", 4);
        switch (f[0]) {
            case "DONE":
                return new Report.Done(Integer.parseInt(f[1]), node);
            case "STOPPED":
                return new Report.Stopped(Integer.parseInt(f[1]), node);
            case "FAILED":
                return new Report.Failed(
                        Integer.parseInt(f[1]), node, Integer.parseInt(f[2]), f.length > 3 ? f[3] : "");
            case "LOST": {
                String[] l = line.split(" ", 5);
                return new Report.Lost(
                        Integer.parseInt(l[1]),
                        node,
                        Integer.parseInt(l[2]),
                        Integer.parseInt(l[3]),
                        l.length > 4 ? l[4] : "");
            }
            default:
                throw new IllegalArgumentException("unknown control report '" + line + "'");
        }
    }

    static String format(Report r) {
        if (r instanceof Report.Done d) {
            return "DONE " + d.round();
        } else if (r instanceof Report.Stopped s) {
            return "STOPPED " + s.round();
        }
        if (r instanceof Report.Lost l) {
            return "LOST " + l.round() + " " + l.rank() + " " + l.exitCode() + " " + l.summary();
        }
        Report.Failed f = (Report.Failed) r;
        return "FAILED " + f.round() + " " + f.exitCode() + " " + f.summary();
    }

    @Override
    public void close() {
        try {
            socket.close();
        } catch (IOException e) {
            // Already gone.
        }
    }
}
