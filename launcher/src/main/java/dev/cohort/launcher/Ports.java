package dev.cohort.launcher;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;

/** Free-port checks done before any worker starts. */
final class Ports {

    private Ports() {
    }

    /** A port that was free a moment ago (bind port 0, read it, close). */
    static int pickFree() {
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(true);
            s.bind(new InetSocketAddress(0));
            return s.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException("cannot find a free port: " + e.getMessage(), e);
        }
    }

    /** @throws IllegalArgumentException when something on this host listens on {@code port} */
    static void requireFree(int port, String option) {
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(true);
            s.bind(new InetSocketAddress(port));
        } catch (IOException e) {
            throw new IllegalArgumentException(option + " " + port + " is taken on this host (" + e.getMessage()
                    + "); pick another port" + (option.equals("--master-port") ? ", or " + option + " 0 for a free one" : ""));
        }
    }
}
