package dev.cohort.runtime.store;

import dev.cohort.api.Topology;
import dev.cohort.api.collective.JoinException;
import dev.cohort.runtime.HostIdentity;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.IntSupplier;

/**
 * How the processes of a job, as they meet in its {@link Store}, check that they started the same
 * job before any of them connects to the others. Every engine that meets in a store (tcp, gloo,
 * and through them hier's host leaders) joins this way.
 *
 * <p>The words: the <em>run</em> is {@code COHORT_RUN_ID/restart count}; a rank <em>joins as</em>
 * what it runs (a backend, or hier's group of host leaders). Rank 0 posts the <em>job</em> (joins
 * as, world size, run) under a key that is not scoped by run, so a rank of another run that reaches
 * this store is told so. Every other rank compares the job with its own. Then each rank claims its
 * rank, posts its <em>member</em> record (address, joins as, world size, host, run) and reads every
 * other's, in rank order.
 *
 * <p>A rank that finds a difference says so, and posts it under the run's <em>failed</em> key
 * before it gives up; the others poll that key while they wait, so they fail at once with that
 * rank's message instead of waiting out the connect timeout. Every process that gives up counts
 * itself <em>left</em>. Rank 0, whose process usually hosts the store, keeps it up after a failure
 * ({@link Linger}) so that no process loses the store before it has read why the others gave up.
 */
public final class JobJoin {

    /** The job rank 0 posts: unscoped, with the run in its value. */
    static final String JOB = "cohort/job";

    private static final long MAX_POLL_MILLIS = 20;

    /** What this process brings to the meeting. */
    public record Newcomer(Topology topology, String run, String joinsAs, String address, String who) {}

    /**
     * What the ranks told each other: every rank's address and host, by rank.
     */
    public record Members(List<String> addresses, List<String> hosts) {

        /** Each other rank's address with the ranks there (several when they share a host), for errors naming a lost peer. */
        public Map<String, String> ranksByAddress(int self) {
            Map<String, String> byAddress = new TreeMap<>();
            for (int r = 0; r < addresses.size(); r++) {
                if (r != self) {
                    byAddress.merge(addresses.get(r), Integer.toString(r), (a, b) -> a + "," + b);
                }
            }
            return byAddress;
        }
    }

    private final Store store;
    private final String where;
    private final Linger linger;
    private final Clock clock;

    /**
     * How long rank 0 keeps the store up after a failed join: at least {@code atLeast}, for ranks
     * still starting, and while {@code otherClients} says another process is connected to it
     * (pass {@code () -> 0} where that is not known); at most until the deadline.
     */
    public record Linger(Duration atLeast, IntSupplier otherClients) {}

    /** Meets in {@code store}, described as {@code where} in errors. */
    public JobJoin(Store store, String where, Linger linger) {
        this(store, where, linger, Clock.SYSTEM);
    }

    JobJoin(Store store, String where, Linger linger, Clock clock) {
        this.store = store;
        this.where = where;
        this.linger = linger;
        this.clock = clock;
    }

    /** Time and pauses, so a test can step the waits. */
    interface Clock {
        long nanoTime();

        void sleep(long millis) throws InterruptedException;

        Clock SYSTEM = new Clock() {
            @Override
            public long nanoTime() {
                return System.nanoTime();
            }

            @Override
            public void sleep(long millis) throws InterruptedException {
                Thread.sleep(millis);
            }
        };
    }

    /**
     * Checks the job, claims the newcomer's rank, posts its record (with its host, {@link
     * HostIdentity}) and reads all others by {@code deadlineNanos} ({@code timeout} from its start,
     * for messages).
     *
     * @throws JoinException naming the ranks and values that differ, a rank claimed twice, or the
     *                       ranks that never came
     */
    public Members join(Newcomer me, long deadlineNanos, Duration timeout) {
        Attempt attempt = new Attempt(me, deadlineNanos, timeout);
        try {
            return attempt.join();
        } catch (JoinException e) {
            attempt.leave();
            if (me.topology().rank() == 0) {
                attempt.linger();
            }
            throw e;
        }
    }

    /**
     * The job's layout as the ranks' hosts say ({@link HostIdentity}): where the launch environment
     * said nothing of it ({@code layoutGiven} false), this is the layout; where it did and the
     * hosts disagree, the disagreement is logged (WARNING) and the launch environment's is kept.
     */
    public static Topology layout(Topology given, List<String> hosts, boolean layoutGiven, System.Logger log) {
        Topology learned = Topology.ofHosts(hosts, given.rank());
        int hostCount = new HashSet<>(hosts).size();
        if (!layoutGiven) {
            if (given.rank() == 0) {
                log.log(
                        System.Logger.Level.INFO,
                        "host layout learned at rendezvous: " + hostCount + " host(s); rank 0's holds "
                                + learned.localWorldSize() + " of the " + given.worldSize() + " ranks");
            }
            return learned;
        }
        if (learned.localWorldSize() != given.localWorldSize() || learned.localRank() != given.localRank()) {
            log.log(
                    System.Logger.Level.WARNING,
                    "rank " + given.rank() + ": LOCAL_RANK=" + given.localRank()
                            + " and LOCAL_WORLD_SIZE=" + given.localWorldSize()
                            + " say one thing, the ranks' hosts another: "
                            + learned.localWorldSize() + " rank(s) share this host, this one local rank "
                            + learned.localRank()
                            + " (ranks on " + hostCount + " host(s)); the launch environment's values are used");
        }
        return given;
    }

    /** One process's join: its keys, deadline and messages. */
    private final class Attempt {
        private final Newcomer me;
        private final int rank;
        private final String world;
        private final long deadline;
        private final Duration timeout;
        /** Under the run's scope, so a run's failure is seen only by its ranks (but see {@link #checkSame}). */
        private final String failedKey;

        private final String arrivedKey;
        private final String worldSumKey;
        private final String leftKey;

        Attempt(Newcomer me, long deadline, Duration timeout) {
            this.me = me;
            this.rank = me.topology().rank();
            this.world = Integer.toString(me.topology().worldSize());
            this.deadline = deadline;
            this.timeout = timeout;
            this.failedKey = failedKey(me.run());
            this.arrivedKey = scoped("arrived");
            this.worldSumKey = scoped("world-sum");
            this.leftKey = scoped("left");
        }

        private String scoped(String key) {
            return "cohort/" + me.run() + "/" + key;
        }

        Members join() {
            store.add(arrivedKey, 1);
            store.add(worldSumKey, me.topology().worldSize());
            if (store.check(failedKey)) {
                throw error(
                        "the other processes at " + where + " had already given up: " + store.get(failedKey),
                        List.of());
            }
            if (rank == 0) {
                store.set(JOB, me.joinsAs() + "|" + world + "|" + me.run());
            } else {
                awaitAll(List.of(JOB), "rank 0 did not join");
                String[] job = store.get(JOB).split("\\|", 3);
                checkSame(0, job[0], job[1], job[2]);
            }
            if (store.add(scoped("claim/" + rank), 1) > 1) {
                throw failure(
                        "another process already joined run '" + me.run() + "' as RANK=" + rank
                                + "; every process needs its own RANK in [0, WORLD_SIZE) (or start the job with one "
                                + "launcher)",
                        List.of(rank));
            }
            store.set(
                    memberKey(rank),
                    String.join("|", me.address(), me.joinsAs(), world, HostIdentity.current(), me.run()));
            List<String> addresses = new ArrayList<>();
            List<String> hosts = new ArrayList<>();
            List<String> keys = new ArrayList<>();
            for (int r = 0; r < me.topology().worldSize(); r++) {
                keys.add(memberKey(r));
            }
            awaitAll(keys, null);
            for (int r = 0; r < keys.size(); r++) {
                String[] peer = store.get(keys.get(r)).split("\\|", 5);
                if (peer.length != 5) {
                    throw failure(
                            "rank " + r + " posted '" + String.join("|", peer) + "', not a member record: it runs "
                                    + "another version of Cohort; every process of a job must run the same",
                            List.of(r));
                }
                checkSame(r, peer[1], peer[2], peer[4]);
                addresses.add(peer[0]);
                hosts.add(peer[3]);
            }
            return new Members(List.copyOf(addresses), List.copyOf(hosts));
        }

        /** Fails (and tells the others) when rank {@code r} joins as something else, in another world or run. */
        private void checkSame(int r, String theirJoinsAs, String theirWorld, String theirRun) {
            if (!theirJoinsAs.equals(me.joinsAs())) {
                throw failure(
                        "rank " + r + " runs " + theirJoinsAs + " (" + theirWorld + " ranks) but this process runs "
                                + me.joinsAs() + " (" + world + " ranks): every process of a job must run the same "
                                + "backend (`auto` picks shm or hier only on JDK 22 or newer, gloo or tcp below it: "
                                + "give every host the same JDK, or name the backend with --distributed-backend)",
                        List.of(r));
            }
            if (!theirWorld.equals(world)) {
                throw failure(
                        "rank " + r + " was started with WORLD_SIZE=" + theirWorld + " but this rank with WORLD_SIZE="
                                + world + "; start every rank with the same WORLD_SIZE",
                        List.of(r));
            }
            if (!theirRun.equals(me.run())) {
                // Both runs are told: the records of two runs on one store cannot be trusted.
                JoinException e = failure(
                        "rank " + r + " belongs to run '" + theirRun + "' but this rank to '" + me.run()
                                + "' (COHORT_RUN_ID/restart count differ); two jobs share MASTER_ADDR:MASTER_PORT? "
                                + "give each job its own",
                        List.of(r));
                post(failedKey(theirRun), e.getMessage());
                throw e;
            }
        }

        /**
         * Waits until every one of {@code keys} is in the store, in order; fails at once with
         * another rank's message when one posted under the failed key, or at the deadline naming
         * what is missing ({@code missing}, else the ranks whose member records are missing).
         */
        private void awaitAll(List<String> keys, String missing) {
            long sleep = 1;
            int next = 0;
            while (true) {
                while (next < keys.size() && store.check(keys.get(next))) {
                    next++;
                }
                if (next == keys.size()) {
                    return;
                }
                if (store.check(failedKey)) {
                    throw error(
                            "gave up meeting at " + where + " because another process did: " + store.get(failedKey),
                            List.of());
                }
                long left = deadline - clock.nanoTime();
                if (left <= 0) {
                    List<Integer> absent = new ArrayList<>();
                    for (String key : keys.subList(next, keys.size())) {
                        if (!store.check(key)) {
                            absent.add(Integer.parseInt(key.substring(key.lastIndexOf('/') + 1)));
                        }
                    }
                    throw error(
                            (missing != null ? missing : "rank(s) " + absent + " did not join") + " at " + where
                                    + " within " + timeout + " (started? the same MASTER_ADDR/MASTER_PORT? the same "
                                    + "backend on every rank?)",
                            missing != null ? List.of(0) : absent);
                }
                try {
                    clock.sleep(Math.min(sleep, Math.max(1, left / 1_000_000)));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new JoinException(me.who() + ": interrupted while waiting at " + where, e);
                }
                sleep = Math.min(2 * sleep, MAX_POLL_MILLIS);
            }
        }

        private String memberKey(int r) {
            return "cohort/member/" + r;
        }

        /** Counts this process out, so rank 0 knows when every process that came has read why. */
        void leave() {
            try {
                store.add(leftKey, 1);
            } catch (RuntimeException e) {
                // The store is gone: nobody waits for this count.
            }
        }

        /**
         * On rank 0 after a failed join: keeps the store up as {@link Linger} says. Returns early
         * once the whole world came, alike, and every process left.
         */
        void linger() {
            long start = clock.nanoTime();
            try {
                while (clock.nanoTime() < deadline) {
                    if (linger.otherClients().getAsInt() == 0) {
                        long arrived = store.add(arrivedKey, 0);
                        boolean everyoneCame = arrived >= me.topology().worldSize()
                                && store.add(worldSumKey, 0)
                                        == arrived * me.topology().worldSize();
                        boolean everyoneLeft = store.add(leftKey, 0) >= arrived;
                        if ((everyoneLeft && everyoneCame)
                                || clock.nanoTime() - start >= linger.atLeast().toNanos()) {
                            return;
                        }
                    }
                    clock.sleep(MAX_POLL_MILLIS);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (RuntimeException e) {
                // The store is this process's own, or gone; there is no one left to tell.
            }
        }

        /** The failure {@code problem}, also posted for the other ranks; the first posted is the one they report. */
        private JoinException failure(String problem, List<Integer> peers) {
            JoinException e = error(problem, peers);
            post(failedKey, e.getMessage());
            return e;
        }

        private JoinException error(String problem, List<Integer> peers) {
            return new JoinException(me.who() + ": " + problem, null, rank, peers);
        }

        private void post(String key, String message) {
            try {
                if (!store.check(key)) {
                    store.set(key, message);
                }
            } catch (RuntimeException e) {
                // Best effort: the others still fail at their connect timeout.
            }
        }
    }

    private static String failedKey(String run) {
        return "cohort/" + run + "/rendezvous-failed";
    }
}
