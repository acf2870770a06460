package dev.cohort.gloo.rendezvous;

import dev.cohort.gloo.GlooConnectException;
import dev.cohort.libtorch.LibTorch;
import dev.cohort.runtime.auth.JobSecret;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import org.bytedeco.javacpp.SizeTPointer;
import org.bytedeco.javacpp.chrono.Milliseconds;
import org.bytedeco.pytorch.FileStore;
import org.bytedeco.pytorch.PrefixStore;
import org.bytedeco.pytorch.Store;
import org.bytedeco.pytorch.TCPStore;
import org.bytedeco.pytorch.TCPStoreOptions;

/**
 * The bootstrap key-value store the ranks meet in: a c10d {@code TCPStore} hosted by rank 0, or
 * a {@code FileStore} on a filesystem every rank shares.
 *
 * <p>Trap: c10d takes stores as {@code intrusive_ptr}; JavaCPP adopts a Java-created store the
 * first time it is passed to native code, and a second pass aborts the process. So the object we
 * construct is kept here (alive for the whole job, it hosts the server on rank 0) and only
 * native-made clones are ever handed on. Both are retained against the caller's
 * {@code PointerScope}.
 */
public final class Rendezvous implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger(Rendezvous.class.getName());

    private final Store owner;
    private final Store client;
    private final String description;
    private final StoreGuard guard;
    private final StoreRelay relay;

    private Rendezvous(Store owner, String description, StoreGuard guard, StoreRelay relay) {
        this.owner = LibTorch.retain(owner);
        this.client = LibTorch.retain(owner.clone());
        this.description = description;
        this.guard = guard;
        this.relay = relay;
    }

    /**
     * Meets where a launcher's agent says (torchrun's, {@code TORCHELASTIC_USE_AGENT_STORE}): rank 0
     * hosts the job's store on a free port of the address it reaches the agent's store from and
     * posts it there under {@code /worker/attempt_<restartCount>/cohort/store}; the other ranks read it
     * and connect. The agent's store is not used beyond that key: its PyTorch may speak another
     * version of c10d's protocol than libtorch's (see {@link AgentStore}).
     */
    public static Rendezvous agent(
            String host,
            int port,
            int rank,
            int worldSize,
            int restartCount,
            Duration timeout,
            Optional<JobSecret> secret) {
        String key = "/worker/attempt_" + restartCount + "/cohort/store";
        try (AgentStore agent = AgentStore.connect(host, port, timeout)) {
            if (rank == 0) {
                String me = agent.localAddress().getHostAddress();
                Rendezvous own = tcp(me, 0, rank, worldSize, timeout, secret);
                if (own.guard == null) {
                    own.close();
                    throw new GlooConnectException("rank 0: cannot host a store for the job here (no /proc to find a "
                            + "socket's descriptor)");
                }
                agent.set(key, me + " " + own.guard.port());
                return own;
            }
            String[] at = agent.get(key, timeout).split(" ");
            if (at.length != 2 || !at[1].matches("[0-9]{1,5}")) {
                throw new GlooConnectException("rank " + rank + ": the launcher's store holds '" + String.join(" ", at)
                        + "' under " + key + ", not an address and port");
            }
            return tcp(at[0], Integer.parseInt(at[1]), rank, worldSize, timeout, secret);
        }
    }

    /**
     * Connects to (on rank 0: hosts) the TCP store at {@code host:port}; waits for all ranks. Rank
     * 0 serves the store in Java ({@link C10dStoreServer}) behind a {@link StoreGuard} on
     * {@code host:port}, its only listening socket; every rank's c10d client, rank 0's too, connects
     * there, with a {@code secret} through a {@link StoreRelay} that proves it.
     */
    public static Rendezvous tcp(
            String host, int port, int rank, int worldSize, Duration timeout, Optional<JobSecret> secret) {
        String where = "TCP store at " + host + ":" + port;
        String who = "rank " + rank + " of " + worldSize;
        TCPStoreOptions options = new TCPStoreOptions()
                .isServer(false)
                .numWorkers(new SizeTPointer(1).put(worldSize))
                // The ranks wait for each other in JobJoin, which can stop early when one of
                // them finds the job misconfigured; the store's own wait could not.
                .waitWorkers(false)
                .timeout(new Milliseconds(timeout.toMillis()));
        String connectTo = host;
        int connectPort = port;
        StoreGuard guard = null;
        StoreRelay relay = null;
        if (rank == 0) {
            guard = StoreGuard.open(resolve(host, who), port, new C10dStoreServer(who), who, secret);
            connectPort = guard.port();
        }
        if (secret.isPresent()) {
            try {
                relay = StoreRelay.open(host, connectPort, secret.get(), timeout, who);
            } catch (RuntimeException e) {
                if (guard != null) {
                    guard.close();
                }
                throw e;
            }
            connectTo = InetAddress.getLoopbackAddress().getHostAddress();
            connectPort = relay.port();
        }
        options.port((short) connectPort);
        try {
            return new Rendezvous(new TCPStore(connectTo, options), where, guard, relay);
        } catch (RuntimeException e) {
            if (guard != null) {
                guard.close();
            }
            String failure = relay == null ? null : relay.failure();
            if (relay != null) {
                relay.close();
            }
            throw new GlooConnectException(
                    who + ": could not "
                            + (rank == 0 ? "host" : "reach") + " the " + where + " within " + timeout
                            + (failure != null
                                    ? ": " + failure
                                    : " (is MASTER_ADDR/MASTER_PORT right, is rank 0 running, and are all " + worldSize
                                            + " ranks started?): " + e.getMessage()),
                    e);
        }
    }

    private static InetAddress resolve(String host, String who) {
        try {
            return InetAddress.getByName(host);
        } catch (IOException e) {
            throw new GlooConnectException(who + ": MASTER_ADDR='" + host + "' does not resolve: " + e.getMessage(), e);
        }
    }

    /** Meets through a file on a filesystem every rank shares. */
    public static Rendezvous file(Path path, int worldSize, Duration timeout) {
        FileStore store = new FileStore(path.toString(), worldSize);
        store.setTimeout(new Milliseconds(timeout.toMillis()));
        return new Rendezvous(store, "file store " + path, null, null);
    }

    /** A native-owned view of the store with every key under {@code prefix}. */
    public Store prefixed(String prefix) {
        return new PrefixStore(prefix, client).clone();
    }

    public Store client() {
        return client;
    }

    /** How many other processes are connected to the store this process hosts (0 when it hosts none). */
    public int connectedClients() {
        return guard == null ? 0 : guard.connectedClients();
    }

    @Override
    public String toString() {
        return description;
    }

    @Override
    public void close() {
        LibTorch.release(client);
        LibTorch.release(owner);
        if (guard != null) {
            guard.close();
        }
        if (relay != null) {
            relay.close();
        }
    }
}
