package dev.cohort.hier;

import dev.cohort.api.collective.CollectiveException;
import dev.cohort.api.collective.CollectiveMismatchException;
import dev.cohort.api.collective.CollectiveTimeoutException;
import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.collective.Work;
import dev.cohort.runtime.store.JobNotes;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * Runs the stages of a hierarchical collective: a stage <em>within the host</em> runs on the shm
 * group of this host's ranks; a stage <em>between hosts</em> runs on the group of the hosts'
 * leaders (local rank 0; gloo, tcp or mpi), while the host's other ranks wait for the leader's <em>verdict</em>: a
 * word broadcast over shm after every such stage, 0 when it succeeded, else the length of the
 * leader's error message, which follows. So a rank whose leader lost a peer on another host fails
 * with the leader's message (naming that peer) instead of timing out. A small result the leader
 * brings back travels in the same broadcast, right after the verdict word.
 *
 * <p>All stages of one collective share its deadline. A leader may relay its verdict up to
 * {@link #VERDICT_GRACE} after the deadline (its own stage may have just timed out), and the
 * others wait that much longer for it. Every failure names this rank, the call, the stage, and the
 * global ranks behind the sub-groups' ranks.
 */
final class Stages {

    static final Duration VERDICT_GRACE = Duration.ofSeconds(2);
    /** Results up to this size travel within the host together with the verdict. */
    static final int SHARED_WITH_VERDICT_BYTES = 64 * 1024;

    /** A stage that only the leader runs, on the leaders' group (whose timeout is the time left). */
    interface LeaderStep {
        void run(ProcessGroup leaders);
    }

    final String who;
    final int host;
    final int hosts;
    final boolean leader;
    final ProcessGroup hostGroup;
    /** The leaders' group: set once connected, on leaders of a job with several hosts. */
    volatile ProcessGroup leaders;
    /** The sub-groups' ranks by their global ranks, once the leaders exchanged them. */
    private final GlobalRanks names;
    /**
     * Where the leaders tell each other why a stage within their host failed, so the other hosts,
     * which only see that leader stop answering, can name the rank behind it (set on leaders of a
     * job with several hosts).
     */
    volatile JobNotes notes;
    /** The engine between hosts, as messages name it ("gloo", "tcp", "mpi"). */
    private final String betweenEngine;
    /**
     * How long past a call's deadline the leaders wait for each other: zero, or with mpi between
     * hosts, where the first failure on any rank ends the whole job, {@link #VERDICT_GRACE}, so
     * that the host where a call failed first (a rank missing within it) ends the job with that
     * reason, not another host's leader with "the leader of host k never issued it".
     */
    private final Duration leadersGrace;
    /** The stage running now, for timeout messages. */
    volatile String current = "none";
    /** The verdict and the small results that travel with it (calls run one at a time). */
    private ByteBuffer packetBytes = ByteBuffer.allocateDirect(0);

    Stages(
            String who,
            int host,
            int hosts,
            boolean leader,
            ProcessGroup hostGroup,
            GlobalRanks names,
            String betweenEngine,
            boolean firstFailureEndsJob) {
        this.who = who;
        this.betweenEngine = Objects.requireNonNull(betweenEngine, "betweenEngine");
        this.leadersGrace = firstFailureEndsJob ? VERDICT_GRACE : Duration.ZERO;
        this.names = Objects.requireNonNull(names, "names");
        this.host = host;
        this.hosts = hosts;
        this.leader = leader;
        this.hostGroup = Objects.requireNonNull(hostGroup, "hostGroup");
    }

    String withinHostName() {
        return "within host " + host + " (shm)";
    }

    String betweenHostsName() {
        return "between hosts (" + betweenEngine + " among the hosts' leaders)";
    }

    /** Runs {@code op} on the shm group of this host with the time left until {@code deadline}. */
    void withinHost(String call, long deadline, Function<ProcessGroup, Work> op) {
        String stage = withinHostName();
        current = stage;
        Duration left = left(call, stage, deadline, Duration.ZERO);
        try {
            op.apply(hostGroup.withTimeout(left)).await();
        } catch (CollectiveException e) {
            throw noted(failed(call, stage, e, e.getMessage()));
        }
    }

    /**
     * Leaves {@code failure}, of a stage within this host, as this leader's note for the other
     * hosts (which see only this leader leave), then returns it. It is posted before the failure
     * is thrown, hence before this leader leaves the leaders' group.
     */
    private CollectiveException noted(CollectiveException failure) {
        JobNotes n = notes;
        if (n != null) {
            n.post(noteKey(host), failure.getMessage());
        }
        return failure;
    }

    private static String noteKey(int host) {
        return "hier/host" + host;
    }

    /** What the other hosts' leaders noted about their own failures, for a failure between hosts. */
    private String otherHostsNotes() {
        JobNotes n = notes;
        if (n == null) {
            return "";
        }
        StringBuilder out = new StringBuilder();
        for (int k = 0; k < hosts; k++) {
            if (k != host) {
                int other = k;
                n.read(noteKey(k))
                        .ifPresent(text -> out.append("; the leader of host ")
                                .append(other)
                                .append(" had failed within its host: ")
                                .append(text));
            }
        }
        return out.toString();
    }

    /**
     * Runs {@code step} on the leader's group of leaders, then relays the leader's verdict to the
     * host's other ranks; every rank of the host calls it. Nothing happens with one host.
     */
    void betweenHosts(String call, long deadline, LeaderStep step) {
        onLeader(call, deadline, left -> step.run(leaders.withTimeout(left)));
    }

    /**
     * Runs {@code step}, given the time left, on the leader only, then relays its verdict; every
     * rank of the host calls it. Nothing happens with one host.
     */
    void onLeader(String call, long deadline, Consumer<Duration> step) {
        if (hosts == 1) {
            return;
        }
        relay(call, deadline, runOnLeader(call, deadline, step), null);
    }

    /**
     * {@link #betweenHosts}, after which the leader's {@code data} is broadcast within the host;
     * up to {@link #SHARED_WITH_VERDICT_BYTES} the data travels with the verdict (one shm step
     * instead of two), larger data after it. Nothing happens with one host.
     */
    void betweenHostsThenShare(String call, long deadline, LeaderStep step, DenseBuffer data) {
        if (hosts == 1) {
            return;
        }
        if (data.byteSize() > SHARED_WITH_VERDICT_BYTES) {
            betweenHosts(call, deadline, step);
            withinHost(call, deadline, g -> g.broadcast(data, 0));
            return;
        }
        int bytes = (int) data.byteSize();
        DenseBuffer packet = packet(bytes);
        DenseBuffer payload = DenseBuffer.of(packetBytes.duplicate().position(8).limit(8 + bytes), data.dataType());
        CollectiveException failure = runOnLeader(call, deadline, left -> step.run(leaders.withTimeout(left)));
        if (leader && failure == null) {
            payload.copyFrom(data);
        }
        relay(call, deadline, failure, packet);
        if (!leader) {
            data.copyFrom(payload);
        }
    }

    /** The verdict word followed by {@code bytes} bytes, in memory reused from call to call. */
    private DenseBuffer packet(int bytes) {
        int words = 1 + (bytes + 7) / 8;
        if (packetBytes.capacity() < 8 * words) {
            packetBytes = ByteBuffer.allocateDirect(8 * words).order(ByteOrder.nativeOrder());
        }
        return DenseBuffer.of(packetBytes.duplicate().clear().limit(8 * words), DataType.INT64);
    }

    /** On the leader: runs {@code step} and returns its failure, naming the stage; null on success or elsewhere. */
    private CollectiveException runOnLeader(String call, long deadline, Consumer<Duration> step) {
        String stage = betweenHostsName();
        current = stage;
        if (!leader) {
            return null;
        }
        try {
            step.accept(left(call, stage, deadline, leadersGrace));
            return null;
        } catch (CollectiveException e) {
            if (e.getMessage().startsWith(who)) {
                return e;
            }
            return failed(call, stage, e, e.getMessage() + leadersLegend() + otherHostsNotes());
        } catch (RuntimeException e) {
            return new CollectiveException(who + ": " + call + " failed " + stage + ": " + e.getMessage(), e);
        }
    }

    /**
     * The verdict: the leader broadcasts it (as word 0 of {@code packet}, or alone when that is
     * null), the others fail with the leader's message when it failed.
     */
    private void relay(String call, long deadline, CollectiveException failure, DenseBuffer packet) {
        String stage = withinHostName() + " waiting for its leader's verdict";
        current = stage;
        byte[] text = failure == null ? new byte[0] : failure.getMessage().getBytes(StandardCharsets.UTF_8);
        DenseBuffer verdict = packet != null ? packet : DenseBuffer.of(new long[1]);
        if (leader) {
            verdict.setLong(0, text.length);
        }
        try {
            // The leader relays even just after the deadline; the others outwait it.
            ProcessGroup g = hostGroup.withTimeout(
                    left(call, stage, deadline, leader ? VERDICT_GRACE : VERDICT_GRACE.multipliedBy(2)));
            g.broadcast(verdict, 0).await();
            long length = verdict.getLong(0);
            if (length != 0) {
                ByteBuffer bytes = ByteBuffer.allocate((int) ((length + 7) / 8 * 8));
                bytes.put(text);
                bytes.clear();
                g.broadcast(DenseBuffer.of(bytes.asLongBuffer()), 0).await();
                if (failure == null) {
                    String leaderMessage = new String(bytes.array(), 0, (int) length, StandardCharsets.UTF_8);
                    throw new CollectiveException(who + ": " + call + " failed " + betweenHostsName()
                            + " on this host's leader" + leaderRank() + ": " + leaderMessage);
                }
            }
        } catch (CollectiveException e) {
            if (failure != null) {
                failure.addSuppressed(e);
                throw failure;
            }
            if (e.getMessage().startsWith(who)) {
                throw e;
            }
            // The step between hosts succeeded and the host failed after it (a leader relaying
            // its verdict finds a local rank gone): the other hosts go on to the next call and
            // see only this leader leave, so it leaves them its note as well.
            throw noted(failed(call, stage, e, e.getMessage()));
        }
        if (failure != null) {
            throw failure;
        }
    }

    private String leaderRank() {
        HostLayout l = names.layout();
        return l == null ? "" : " (global rank " + l.globalRank(host, 0) + ")";
    }

    /** The time left until {@code deadline} plus {@code extra}; a timeout failure when none is. */
    private Duration left(String call, String stage, long deadline, Duration extra) {
        long nanos = deadline - System.nanoTime() + extra.toNanos();
        if (nanos <= 0) {
            throw new CollectiveTimeoutException(who + ": " + call + " timed out before the stage " + stage, null);
        }
        return Duration.ofNanos(nanos);
    }

    /** The same kind of failure (timeout, mismatch, other), naming this rank, the call and the stage. */
    private CollectiveException failed(String call, String stage, CollectiveException cause, String detail) {
        String message = who + ": " + call + " failed " + stage + ": " + detail;
        CollectiveException e;
        if (cause instanceof CollectiveTimeoutException) {
            e = new CollectiveTimeoutException(message, cause);
        } else if (cause instanceof CollectiveMismatchException) {
            e = new CollectiveMismatchException(message);
            e.initCause(cause);
        } else {
            e = new CollectiveException(message, cause);
        }
        return e;
    }

    /** After a failure between hosts, once the hosts are known: which leader is which host's. */
    private String leadersLegend() {
        HostLayout l = names.layout();
        return l == null ? "" : " [in the leaders' group, rank k is the leader of host k: " + l.leaders() + "]";
    }
}
