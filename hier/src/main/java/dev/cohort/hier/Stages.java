package dev.cohort.hier;

import dev.cohort.core.collective.CollectiveException;
import dev.cohort.core.collective.CollectiveMismatchException;
import dev.cohort.core.collective.CollectiveTimeoutException;
import dev.cohort.core.collective.DenseBuffer;
import dev.cohort.core.collective.ProcessGroup;
import dev.cohort.core.collective.Work;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Runs the stages of a hierarchical collective: a stage <em>within the host</em> runs on the shm
 * group of this host's ranks; a stage <em>between hosts</em> runs on the Gloo group of the hosts'
 * leaders (local rank 0), while the host's other ranks wait for the leader's <em>verdict</em>: a
 * word broadcast over shm after every such stage, 0 when it succeeded, else the length of the
 * leader's error message, which follows. So a rank whose leader lost a peer on another host fails
 * with the leader's message (naming that peer) instead of timing out.
 *
 * <p>All stages of one collective share its deadline. A leader may relay its verdict up to
 * {@link #VERDICT_GRACE} after the deadline (its own stage may have just timed out), and the
 * others wait that much longer for it. Every failure names this rank, the call, the stage, and the
 * global ranks behind the sub-groups' ranks.
 */
final class Stages {

    static final Duration VERDICT_GRACE = Duration.ofSeconds(2);
    private static final Pattern LOCAL_PEER = Pattern.compile("peer rank (\\d+)");
    private static final Pattern LEADER_PEER = Pattern.compile("\\(rank\\(s\\) ([0-9,]+)\\)");

    /** A stage that only the leader runs, given the time left. */
    interface LeaderStep {
        void run(ProcessGroup leaders);
    }

    final String who;
    final int host;
    final int hosts;
    final boolean leader;
    final ProcessGroup hostGroup;
    /** The leaders' Gloo group: set once connected, on leaders of a job with several hosts. */
    volatile ProcessGroup leaders;
    /** Known once the leaders exchanged their ranks; until then messages keep the sub-groups' ranks. */
    volatile HostLayout layout;
    /** The stage running now, for timeout messages. */
    volatile String current = "none";

    Stages(String who, int host, int hosts, boolean leader, ProcessGroup hostGroup) {
        this.who = who;
        this.host = host;
        this.hosts = hosts;
        this.leader = leader;
        this.hostGroup = hostGroup;
    }

    String withinHostName() {
        return "within host " + host + " (shm)";
    }

    static String betweenHostsName() {
        return "between hosts (gloo among the hosts' leaders)";
    }

    /** Runs {@code op} on the shm group of this host with the time left until {@code deadline}. */
    void withinHost(String call, long deadline, Function<ProcessGroup, Work> op) {
        String stage = withinHostName();
        current = stage;
        Duration left = left(call, stage, deadline, Duration.ZERO);
        try {
            op.apply(hostGroup.withTimeout(left)).await();
        } catch (CollectiveException e) {
            throw failed(call, stage, e, withGlobalRanks(e.getMessage(), false));
        }
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
        String stage = betweenHostsName();
        current = stage;
        CollectiveException failure = null;
        if (leader) {
            try {
                step.accept(left(call, stage, deadline, Duration.ZERO));
            } catch (CollectiveException e) {
                failure = e.getMessage().startsWith(who) ? e : failed(call, stage, e, withGlobalRanks(e.getMessage(), true));
            } catch (RuntimeException e) {
                failure = new CollectiveException(who + ": " + call + " failed " + stage + ": " + e.getMessage(), e);
            }
        }
        relay(call, deadline, failure);
    }

    /** The verdict: the leader broadcasts it, the others fail with the leader's message when it failed. */
    private void relay(String call, long deadline, CollectiveException failure) {
        String stage = "waiting for the verdict of host " + host + "'s leader";
        current = stage;
        byte[] text = failure == null ? new byte[0] : failure.getMessage().getBytes(StandardCharsets.UTF_8);
        long[] verdict = {text.length};
        try {
            // The leader relays even just after the deadline; the others outwait it.
            ProcessGroup g = hostGroup.withTimeout(left(call, stage, deadline, leader ? VERDICT_GRACE
                    : VERDICT_GRACE.multipliedBy(2)));
            g.broadcast(DenseBuffer.of(verdict), 0).await();
            if (verdict[0] != 0) {
                ByteBuffer bytes = ByteBuffer.allocate((int) ((verdict[0] + 7) / 8 * 8));
                bytes.put(text);
                bytes.clear();
                g.broadcast(DenseBuffer.of(bytes.asLongBuffer()), 0).await();
                if (failure == null) {
                    String leaderMessage = new String(bytes.array(), 0, (int) verdict[0], StandardCharsets.UTF_8);
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
            throw failed(call, stage, e, withGlobalRanks(e.getMessage(), false));
        }
        if (failure != null) {
            throw failure;
        }
    }

    private String leaderRank() {
        HostLayout l = layout;
        return l == null ? "" : " (global rank " + l.globalRank(host, 0) + ")";
    }

    /** The time left until {@code deadline} plus {@code extra}; a timeout failure when none is. */
    private Duration left(String call, String stage, long deadline, Duration extra) {
        long nanos = deadline - System.nanoTime() + extra.toNanos();
        if (nanos <= 0) {
            throw new CollectiveTimeoutException(who + ": " + call + " timed out before the stage " + stage);
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

    /**
     * {@code message} of a sub-group with its ranks translated: shm's "peer rank j" is local rank
     * j of this host; Gloo's "(rank(s) k)" is the leader of host k.
     */
    String withGlobalRanks(String message, boolean betweenHosts) {
        HostLayout l = layout;
        if (l == null || message == null) {
            return message;
        }
        StringBuilder out = new StringBuilder();
        Matcher m = (betweenHosts ? LEADER_PEER : LOCAL_PEER).matcher(message);
        while (m.find()) {
            String replacement;
            if (betweenHosts) {
                StringBuilder ranks = new StringBuilder();
                for (String k : m.group(1).split(",")) {
                    int h = Integer.parseInt(k);
                    ranks.append(ranks.isEmpty() ? "" : ", ").append("global rank ")
                            .append(h < l.hosts ? l.globalRank(h, 0) : -1).append(" (leader of host ").append(h).append(')');
                }
                replacement = "(rank(s) " + m.group(1) + ": " + ranks + ")";
            } else {
                int j = Integer.parseInt(m.group(1));
                replacement = m.group() + (j < l.perHost ? " (global rank " + l.globalRank(host, j) + ")" : "");
            }
            m.appendReplacement(out, Matcher.quoteReplacement(replacement));
        }
        m.appendTail(out);
        if (betweenHosts) {
            out.append(" [in the leaders' group, rank k is the leader of host k: ").append(l.leaders()).append(']');
        }
        return out.toString();
    }
}
