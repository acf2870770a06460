package dev.cohort.launcher.control;

import dev.cohort.runtime.auth.JobSecret;
import dev.cohort.runtime.elastic.ElasticJob;
import dev.cohort.runtime.store.TcpStore;
import dev.cohort.runtime.store.TcpStoreServer;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.Optional;
import java.util.function.IntFunction;
import java.util.stream.Collectors;

/**
 * The store where an elastic run's generations are published for its workers' {@link ElasticJob}s,
 * hosted by the referee's launcher (node 0's). Each {@link Command.Regroup} becomes
 * {@link ElasticJob#generationKey}: the new rank 0's host, then the members as {@code rank:node}.
 *
 * @param server the store, hosted in this launcher
 * @param client this launcher's connection to it, which publishes
 * @param host   the address the workers reach the store at
 */
record Generations(TcpStoreServer server, TcpStore client, String host) implements AutoCloseable {

    /** Hosts the store on {@code host} (an address of this machine that every node's workers reach). */
    static Generations open(String host, Optional<JobSecret> secret) {
        InetAddress address;
        try {
            address = InetAddress.getByName(host);
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("cannot host the elastic run's generation store on " + host + ": " + e);
        }
        TcpStoreServer server = TcpStoreServer.start(address, 0, secret);
        TcpStore client = TcpStore.connect(
                address.getHostAddress(),
                server.port(),
                System.nanoTime() + 10_000_000_000L,
                Duration.ofSeconds(10),
                secret);
        return new Generations(server, client, address.getHostAddress());
    }

    /** Where the workers reach it: {@code host:port}. */
    String address() {
        return host + ":" + server.port();
    }

    /** Publishes {@code regroup}; {@code hostOf} gives the address of each node's host. */
    void publish(Command.Regroup regroup, IntFunction<String> hostOf) {
        String members =
                regroup.members().stream().map(m -> m.rank() + ":" + m.node()).collect(Collectors.joining(","));
        String master = hostOf.apply(regroup.members().get(0).node());
        client.set(ElasticJob.generationKey(regroup.round(), regroup.generation()), master + " " + members);
        client.set(ElasticJob.latestKey(regroup.round()), Integer.toString(regroup.generation()));
    }

    @Override
    public void close() {
        client.close();
        server.close();
    }
}
