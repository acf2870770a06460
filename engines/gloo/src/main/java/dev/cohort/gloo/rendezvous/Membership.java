package dev.cohort.gloo.rendezvous;

import dev.cohort.api.Topology;
import dev.cohort.gloo.GlooConnectException;
import dev.cohort.runtime.HostIdentity;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.IntSupplier;
import org.bytedeco.pytorch.Store;
import org.bytedeco.pytorch.StringVector;

/**
 * How the processes of a job check, as they meet in the store, that they started the same job,
 * before any of them builds a Gloo group on it.
 *
 * <p>Rank 0 posts the <em>job</em>: what it runs ({@code GlooOptions.joinsAs}, e.g. the gloo
 * backend, or the group of hier's host leaders), its {@code WORLD_SIZE} and its run. Every other
 * rank compares the job with its own before it claims its rank. Then each rank claims its rank,
 * posts its <em>member</em> record (address, world size, run) and reads every other's.
 *
 * <p>A rank that finds a difference says so, and also posts it under the <em>failed</em> key
 * before it gives up. The others poll that key while they wait for records, so they fail at once
 * with that rank's message instead of waiting out the connect timeout for ranks that will never
 * come. This is what happens when hosts run different backends, for instance {@code auto} on
 * hosts with different JDKs. A process that comes after that finds the key at once; rank 0, whose
 * process hosts the store, keeps it up while another process is connected to it, and at least a
 * little while for latecomers ({@link #LINGER}), so that no process loses the store before it has
 * read why the others gave up.
 */
public final class Membership {

    /** Unscoped, with the run in its value: a rank of another run that reaches this store is told so. */
    static final String JOB = "cohort/job";
    /**
     * How long rank 0, whose process hosts the store, keeps it up after the rendezvous failed, so
     * that ranks still starting learn why instead of finding no store (at most until the connect
     * timeout; less once every rank of its world came and all were started alike). Past it, the
     * store stays up while another process is still connected (until the connect timeout).
     */
    static final Duration LINGER = Duration.ofSeconds(10);

    private static final long MAX_POLL_MILLIS = 20;

    private final Store store;
    private final IntSupplier connectedClients;
    /**
     * Keys under this run's scope, so that a run's failure is seen only by that run's ranks; the
     * one exception is a rank that finds a rank of another run, which tells both runs.
     */
    private final String failedKey;
    /** How many processes came, and the sum of the WORLD_SIZEs they were started with. */
    private final String arrivedKey;

    private final String worldSumKey;
    private final String where;
    private final String me;
    private final long deadline;
    private final Duration timeout;

    private Membership(
            Store store, IntSupplier connectedClients, String scope, String where, String me, Duration timeout) {
        this.store = store;
        this.connectedClients = connectedClients;
        this.failedKey = failedKey(scope);
        this.arrivedKey = "cohort/" + scope + "/arrived";
        this.worldSumKey = "cohort/" + scope + "/world-sum";
        this.where = where;
        this.me = me;
        this.timeout = timeout;
        this.deadline = System.nanoTime() + timeout.toNanos();
    }

    /**
     * Checks the job, claims this rank, posts its record (with its host, {@link HostIdentity}) and
     * reads all others within {@code timeout}.
     *
     * @throws GlooConnectException naming the ranks and values that differ, a rank claimed twice,
     *                              or a rank that never came
     */
    public static Members join(
            Rendezvous rendezvous, Topology topology, String address, String scope, String joinsAs, Duration timeout) {
        String me = "rank " + topology.rank() + " of " + topology.worldSize();
        Membership membership = new Membership(
                rendezvous.client(), rendezvous::connectedClients, scope, rendezvous.toString(), me, timeout);
        try {
            return membership.join(topology, address, scope, joinsAs);
        } catch (GlooConnectException e) {
            if (topology.rank() == 0) {
                membership.linger(topology.worldSize());
            }
            throw e;
        }
    }

    /**
     * What the ranks told each other: each other rank's address with the ranks there (several when
     * they share a host), so errors about a lost peer can name it; and every rank's host.
     */
    public record Members(Map<String, String> ranksByAddress, List<String> hosts) {}

    private Members join(Topology topology, String address, String scope, String joinsAs) {
        String world = Integer.toString(topology.worldSize());
        store.add(arrivedKey, 1);
        store.add(worldSumKey, topology.worldSize());
        if (store.check(new StringVector(failedKey))) {
            throw new GlooConnectException(
                    me + ": the other processes at " + where + " had already given up: " + store.get_to_str(failedKey));
        }
        if (topology.rank() == 0) {
            store.set(JOB, joinsAs + "|" + world + "|" + scope);
        } else {
            await(JOB, "rank 0 did not join the rendezvous");
            String[] job = store.get_to_str(JOB).split("\\|", 3);
            if (!job[0].equals(joinsAs)) {
                throw failure("rank 0 runs " + job[0] + " (" + job[1] + " ranks) but this process runs " + joinsAs
                        + " (" + world + " ranks): every process of a job must run the same backend (`auto` picks "
                        + "shm or hier only on JDK 22 or newer, gloo below it: give every host the same JDK, or "
                        + "name the backend with --distributed-backend)");
            }
            checkSame(0, job[1], job[2], world, scope);
        }
        if (store.add("cohort/" + scope + "/claim/" + topology.rank(), 1) > 1) {
            throw failure("another process already joined run '" + scope + "' as RANK=" + topology.rank()
                    + "; every process needs its own RANK in [0, WORLD_SIZE)");
        }
        store.set(
                "cohort/member/" + topology.rank(), address + "|" + world + "|" + HostIdentity.current() + "|" + scope);
        Map<String, String> byAddress = new TreeMap<>();
        List<String> hosts = new ArrayList<>();
        for (int r = 0; r < topology.worldSize(); r++) {
            String key = "cohort/member/" + r;
            await(key, "rank " + r + " did not join the rendezvous");
            String[] peer = store.get_to_str(key).split("\\|", 4);
            checkSame(r, peer[1], peer[3], world, scope);
            hosts.add(peer[2]);
            if (r != topology.rank()) {
                byAddress.merge(peer[0], Integer.toString(r), (a, b) -> a + "," + b);
            }
        }
        return new Members(new HashMap<>(byAddress), List.copyOf(hosts));
    }

    private void checkSame(int rank, String theirWorld, String theirScope, String world, String scope) {
        if (!theirWorld.equals(world)) {
            throw failure("rank " + rank + " was started with WORLD_SIZE=" + theirWorld
                    + " but this rank with WORLD_SIZE=" + world + "; start every rank with the same WORLD_SIZE");
        }
        if (!theirScope.equals(scope)) {
            // Both runs are told: the records of two runs on one store cannot be trusted.
            GlooConnectException e = failure("rank " + rank + " belongs to run '" + theirScope + "' but this rank to '"
                    + scope + "' (COHORT_RUN_ID/restart count differ); two jobs share MASTER_ADDR:MASTER_PORT?");
            post(failedKey(theirScope), e.getMessage());
            throw e;
        }
    }

    /**
     * Waits until {@code key} is in the store; fails at once with another rank's message when one
     * posted under the failed key, or with {@code missing} at the deadline.
     */
    private void await(String key, String missing) {
        long sleep = 1;
        while (true) {
            if (store.check(new StringVector(key))) {
                return;
            }
            if (store.check(new StringVector(failedKey))) {
                throw new GlooConnectException(me + ": gave up meeting at " + where + " because another process "
                        + "did: " + store.get_to_str(failedKey));
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new GlooConnectException(me + ": " + missing + " at " + where + " within " + timeout
                        + " (is it started, with the same MASTER_ADDR/MASTER_PORT, and does it run the same backend?)");
            }
            try {
                Thread.sleep(Math.min(sleep, Math.max(1, left / 1_000_000)));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new GlooConnectException(me + ": interrupted while waiting at " + where, e);
            }
            sleep = Math.min(2 * sleep, MAX_POLL_MILLIS);
        }
    }

    /**
     * On rank 0 after a failed rendezvous: keeps the store up for late ranks (see {@link #LINGER}),
     * and while any other process is connected to it, for it may not have read the failure yet.
     */
    private void linger(int world) {
        long until = Math.min(deadline, System.nanoTime() + LINGER.toNanos());
        try {
            while (System.nanoTime() < deadline) {
                if (connectedClients.getAsInt() == 0) {
                    if (System.nanoTime() >= until) {
                        return;
                    }
                    long arrived = store.add(arrivedKey, 0);
                    if (arrived >= world && store.add(worldSumKey, 0) == arrived * world) {
                        return;
                    }
                }
                Thread.sleep(MAX_POLL_MILLIS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            // The store is this process's own; if it fails there is no one left to tell.
        }
    }

    /** The failure {@code problem}, also posted for the other ranks; the first posted is the one they report. */
    private GlooConnectException failure(String problem) {
        String message = me + ": " + problem;
        post(failedKey, message);
        return new GlooConnectException(message);
    }

    private void post(String key, String message) {
        try {
            if (!store.check(new StringVector(key))) {
                store.set(key, message);
            }
        } catch (RuntimeException e) {
            // Best effort: the others still fail at their connect timeout.
        }
    }

    private static String failedKey(String scope) {
        return "cohort/" + scope + "/rendezvous-failed";
    }
}
