package dev.cohort.runtime;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.IntPredicate;

/**
 * Ports to tell others before listening on them, picked below Linux's ephemeral range (32768 and
 * up). Between the pick and the listen, no socket bound to port 0 and no connecting client can be
 * given such a port; an ephemeral one could go to either (a client that connects before its server
 * listens may even connect to itself), and the ranks would then reach a stranger's socket instead
 * of their store (the reason torchrun's default port is 29500).
 */
public final class FreePorts {

    private static final int LOW = 20_000;
    private static final int COUNT = 12_000;

    private FreePorts() {}

    /** A port free on {@code host} (null: every address of this host) a moment ago, in 20000-31999. */
    public static int pick(InetAddress host) {
        return pick(host, port -> true);
    }

    /** As {@link #pick(InetAddress)}, of the ports {@code wanted} accepts. */
    public static int pick(InetAddress host, IntPredicate wanted) {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        for (int attempt = 0; attempt < 200; attempt++) {
            int port = LOW + random.nextInt(COUNT);
            if (!wanted.test(port)) {
                continue;
            }
            try (ServerSocket s = new ServerSocket()) {
                s.bind(new InetSocketAddress(host, port), 1);
                return port;
            } catch (IOException e) {
                // taken: another
            }
        }
        throw new IllegalStateException("no free TCP port in " + LOW + "-" + (LOW + COUNT - 1) + " on "
                + (host == null ? "this host" : host.getHostAddress()) + " after 200 tries");
    }
}
