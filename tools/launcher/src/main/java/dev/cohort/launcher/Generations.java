package dev.cohort.launcher;

import dev.cohort.runtime.auth.JobSecret;
import dev.cohort.runtime.elastic.ElasticJob;
import dev.cohort.runtime.store.TcpStore;
import dev.cohort.runtime.store.TcpStoreServer;
import java.net.InetAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * The generations of an elastic run's group, in a store the launcher hosts on loopback (the
 * workers' {@link ElasticJob}s read it): generation 0 is every worker started; each lost worker
 * makes the next, the workers still alive in their old order with a fresh port for the new rank 0.
 */
final class Generations implements AutoCloseable {

    private final TcpStoreServer server;
    private final TcpStore client;
    private final int min;
    private final List<Integer> alive = new ArrayList<>();
    private int generation;

    private Generations(TcpStoreServer server, TcpStore client, int workers, int min, int masterPort) {
        this.server = server;
        this.client = client;
        this.min = min;
        for (int w = 0; w < workers; w++) {
            alive.add(w);
        }
        publish(masterPort);
    }

    /** Hosts the store of a run of {@code workers} whose generation 0 meets at {@code masterPort}. */
    static Generations open(int workers, int min, int masterPort, Optional<JobSecret> secret) {
        TcpStoreServer server = TcpStoreServer.start(InetAddress.getLoopbackAddress(), 0, secret);
        TcpStore client = TcpStore.connect("127.0.0.1", server.port(), System.nanoTime() + 10_000_000_000L,
                Duration.ofSeconds(10), secret);
        return new Generations(server, client, workers, min, masterPort);
    }

    /** What every worker is told: where the store is. */
    String storeAddress() {
        return "127.0.0.1:" + server.port();
    }

    /**
     * Worker {@code localRank} was lost: publishes the next generation and returns true, or returns
     * false when fewer than the minimum would be left.
     */
    synchronized boolean lose(int localRank) {
        alive.remove(Integer.valueOf(localRank));
        if (alive.size() < min || alive.isEmpty()) {
            return false;
        }
        generation++;
        publish(Ports.pickFree());
        return true;
    }

    synchronized int alive() {
        return alive.size();
    }

    synchronized int generation() {
        return generation;
    }

    private void publish(int port) {
        client.set(ElasticJob.GENERATION + generation,
                port + " " + alive.stream().map(String::valueOf).collect(Collectors.joining(",")));
        client.set(ElasticJob.LATEST, Integer.toString(generation));
    }

    @Override
    public void close() {
        client.close();
        server.close();
    }
}
