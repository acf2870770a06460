package dev.cohort.launcher;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;

/** Free-port checks done before any worker starts. */
final class Ports {

    private Ports() {}

    /** Where free master ports are picked: below Linux's ephemeral range (32768 and up). */
    static final int PICK_FROM = 20_000;

    static final int PICK_TO = 32_000;

    /**
     * A port that was free a moment ago, with the next one (the multi-node control channel) free
     * too. Picked below the ephemeral range, as torchrun's 29500 is: a rank that connects to an
     * ephemeral port before rank 0 listens can be handed that very port and connect to itself,
     * taking it from rank 0.
     */
    static int pickFree() {
        java.util.concurrent.ThreadLocalRandom random = java.util.concurrent.ThreadLocalRandom.current();
        IOException last = null;
        for (int attempt = 0; attempt < 200; attempt++) {
            int port = PICK_FROM + random.nextInt(PICK_TO - PICK_FROM);
            try (ServerSocket a = bound(port);
                    ServerSocket b = bound(port + 1)) {
                return port;
            } catch (IOException e) {
                last = e;
            }
        }
        throw new IllegalStateException("cannot find a free port in " + PICK_FROM + "-" + PICK_TO + ": "
                + (last == null ? "" : last.getMessage()) + "; pass --master-port");
    }

    private static ServerSocket bound(int port) throws IOException {
        ServerSocket s = new ServerSocket();
        try {
            s.setReuseAddress(true);
            s.bind(new InetSocketAddress(port));
            return s;
        } catch (IOException e) {
            s.close();
            throw e;
        }
    }

    /** @throws IllegalArgumentException when something on this host listens on {@code port} */
    static void requireFree(int port, String option) {
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(true);
            s.bind(new InetSocketAddress(port));
        } catch (IOException e) {
            throw new IllegalArgumentException(
                    option + " " + port + " is taken on this host (" + e.getMessage() + "); pick another port"
                            + (option.equals("--master-port") ? ", or " + option + " 0 for a free one" : ""));
        }
    }
}
