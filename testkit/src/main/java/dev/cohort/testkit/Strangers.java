package dev.cohort.testkit;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * Strangers on every port a job listens on: while the job runs, finds each TCP port that this
 * JVM's child processes listen on (through {@code /proc}) and visits it once with each kind of
 * {@link Visit}. Each visit must end with the job's side closing the connection, having sent at
 * most a handshake's answer: that is "refused". Test-only; Linux only.
 */
public final class Strangers implements AutoCloseable {

    /** What a stranger does on a connection. */
    public enum Visit {
        /** Random bytes. */
        JUNK,
        /** Cohort's protocols' plain openings, with no handshake: a client without the job's secret. */
        NO_SECRET,
        /** A well-formed authentication hello, then a proof made without the secret. */
        WRONG_SECRET,
        /** A well-formed authentication hello, then nothing. */
        CUT_SHORT,
        /** Connects and says nothing. */
        SILENT
    }

    /** The outcome of one visit. */
    public record Outcome(int port, Visit visit, boolean refused, String detail) {}

    private static final int ANSWER_BYTES = 72;
    private static final int WAIT_MILLIS = 20_000;

    private final Random random;
    private final Set<Integer> seen = ConcurrentHashMap.newKeySet();
    private final List<Outcome> outcomes = java.util.Collections.synchronizedList(new ArrayList<>());
    private final ExecutorService visitors = Executors.newCachedThreadPool();
    private final Thread scanner;
    private volatile boolean stop;

    private Strangers(long seed) {
        this.random = new Random(seed);
        this.scanner = new Thread(this::scan, "strangers");
        scanner.setDaemon(true);
        scanner.start();
    }

    /** Starts visiting the ports of this JVM's child processes, from {@code seed}. */
    public static Strangers visitChildren(long seed) {
        return new Strangers(seed);
    }

    private void scan() {
        while (!stop) {
            for (int port : listeningPorts(ProcessHandle.current()
                    .descendants()
                    .map(ProcessHandle::pid)
                    .toList())) {
                if (seen.add(port)) {
                    for (Visit v : Visit.values()) {
                        long seed = random.nextLong();
                        visitors.submit(() -> outcomes.add(visit(port, v, new Random(seed))));
                    }
                }
            }
            try {
                Thread.sleep(2);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    /** Visits {@code port} of loopback once, as {@code visit} says. */
    public static Outcome visit(int port, Visit visit, Random random) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 2_000);
            s.setSoTimeout(WAIT_MILLIS);
            OutputStream out = s.getOutputStream();
            switch (visit) {
                case JUNK -> {
                    byte[] junk = new byte[1 + random.nextInt(300)];
                    random.nextBytes(junk);
                    out.write(junk);
                }
                case NO_SECRET -> {
                    // the openings of Cohort's store, peer mesh and messages, and c10d's store
                    String[] hellos = {
                        "CohortKV\0\0\0\1",
                        "GStrohoC\2\0\0\0\0\0\0\0\1\0\0\0\0\0\0\0",
                        "CohortP2\0\0\0\0\0\0\0\0",
                        "\0\u00ce\u00f7\u0085\u003c"
                    };
                    out.write(hellos[random.nextInt(hellos.length)].getBytes(StandardCharsets.ISO_8859_1));
                    byte[] junk = new byte[random.nextInt(64)];
                    random.nextBytes(junk);
                    out.write(junk);
                }
                case WRONG_SECRET, CUT_SHORT -> {
                    byte[] hello = new byte[40];
                    random.nextBytes(hello);
                    System.arraycopy("CohAuthC".getBytes(StandardCharsets.US_ASCII), 0, hello, 0, 8);
                    out.write(hello);
                    if (visit == Visit.WRONG_SECRET) {
                        byte[] answer = s.getInputStream().readNBytes(ANSWER_BYTES);
                        if (answer.length < ANSWER_BYTES) {
                            return new Outcome(
                                    port, visit, true, "closed before answering (" + answer.length + " bytes)");
                        }
                        byte[] proof = new byte[32];
                        random.nextBytes(proof);
                        out.write(proof);
                        out.write("and then a request".getBytes(StandardCharsets.US_ASCII));
                    }
                }
                case SILENT -> {
                    // nothing
                }
                default -> throw new IllegalArgumentException(visit.toString());
            }
            out.flush();
            return waitForClose(port, visit, s.getInputStream());
        } catch (IOException e) {
            return new Outcome(port, visit, true, e.toString());
        }
    }

    /** Refused: the other side closes, having sent no more than a handshake's answer. */
    private static Outcome waitForClose(int port, Visit visit, InputStream in) throws IOException {
        int got = 0;
        try {
            byte[] b = new byte[256];
            int n;
            while ((n = in.read(b)) >= 0) {
                got += n;
                if (got > ANSWER_BYTES) {
                    return new Outcome(port, visit, false, "was answered with " + got + " bytes");
                }
            }
            return new Outcome(port, visit, true, "closed after " + got + " bytes");
        } catch (SocketTimeoutException e) {
            return new Outcome(port, visit, false, "still open after " + WAIT_MILLIS + " ms");
        } catch (IOException e) {
            return new Outcome(port, visit, true, e.toString());
        }
    }

    /** Stops looking for new ports and waits for the visits under way; their outcomes. */
    public List<Outcome> finish() throws InterruptedException {
        stop = true;
        scanner.join(5_000);
        visitors.shutdown();
        visitors.awaitTermination(60, TimeUnit.SECONDS);
        synchronized (outcomes) {
            return List.copyOf(outcomes);
        }
    }

    @Override
    public void close() {
        stop = true;
        visitors.shutdownNow();
    }

    /** The TCP ports that the processes {@code pids} listen on. */
    static Set<Integer> listeningPorts(List<Long> pids) {
        Set<String> inodes = new HashSet<>();
        for (long pid : pids) {
            try (DirectoryStream<Path> fds = Files.newDirectoryStream(Path.of("/proc/" + pid + "/fd"))) {
                for (Path fd : fds) {
                    try {
                        String target = Files.readSymbolicLink(fd).toString();
                        if (target.startsWith("socket:[")) {
                            inodes.add(target.substring(8, target.length() - 1));
                        }
                    } catch (IOException | RuntimeException e) {
                        // closed while listing
                    }
                }
            } catch (IOException | RuntimeException e) {
                // the process ended
            }
        }
        Set<Integer> ports = new HashSet<>();
        for (String table : new String[] {"/proc/net/tcp", "/proc/net/tcp6"}) {
            try {
                for (String line : Files.readAllLines(Path.of(table))) {
                    String[] f = line.trim().split("\\s+");
                    if (f.length > 9 && f[3].equals("0A") && inodes.contains(f[9])) {
                        ports.add(Integer.parseInt(f[1].substring(f[1].lastIndexOf(':') + 1), 16));
                    }
                }
            } catch (IOException | RuntimeException e) {
                // no such table
            }
        }
        return ports;
    }

    /** Outcomes by port, for messages. */
    public static Map<Integer, List<String>> byPort(List<Outcome> outcomes) {
        Map<Integer, List<String>> m = new java.util.TreeMap<>();
        for (Outcome o : outcomes) {
            m.computeIfAbsent(o.port(), p -> new ArrayList<>())
                    .add(o.visit() + (o.refused() ? " refused" : " NOT refused: ") + (o.refused() ? "" : o.detail()));
        }
        return m;
    }
}
