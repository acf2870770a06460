package dev.cohort.runtime.threads;

import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.CollectiveException;
import dev.cohort.api.collective.CollectiveMismatchException;
import dev.cohort.api.collective.CollectiveTimeoutException;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.runtime.AlltoallCounts;
import dev.cohort.runtime.Daemons;
import dev.cohort.runtime.PendingWork;
import dev.cohort.runtime.Reduction;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * The meeting point of one group's ranks inside a JVM.
 *
 * <p>A <em>round</em> is one sequence number: each rank deposits its call and its pending work
 * there. The rank that arrives last checks that all calls agree, computes the result once from
 * every rank's buffers (folding ranks in rank order, so all ranks get the same bits), writes
 * every rank's output and completes all works. A failure (mismatch, timeout, close) breaks the
 * exchange: every pending and later call fails with the same cause.
 *
 * <p>The computing runs on the exchange's own thread, in round order, not on the rank that
 * arrived last: that rank goes on at once, so a collective started during backward overlaps it
 * on every rank. The thread ends after a second without work.
 */
final class ThreadsExchange {

    private final int size;
    private final String name;
    private final Map<Long, Round> rounds = new ConcurrentHashMap<>();
    private volatile CollectiveException broken;
    private final Map<String, ThreadsExchange> children = new ConcurrentHashMap<>();
    private final Map<List<Integer>, Mailbox> mailboxes = new ConcurrentHashMap<>();
    private final ThreadPoolExecutor computing;

    ThreadsExchange(String name, int size) {
        this.name = name;
        this.size = size;
        this.computing = new ThreadPoolExecutor(
                0,
                1,
                1,
                TimeUnit.SECONDS,
                new LinkedBlockingQueue<>(),
                Daemons.named("cohort-threads-" + name.replace(' ', '-')));
    }

    int size() {
        return size;
    }

    /** The exchange of the subgroup {@code name} of this one ({@code size} ranks): made by the first member to ask. */
    ThreadsExchange child(String name, int size) {
        return children.computeIfAbsent(name, n -> new ThreadsExchange(this.name + " " + n, size));
    }

    PendingWork submit(int rank, Collective call, Duration timeout) {
        PendingWork work = new PendingWork(call, timeout, w -> timedOut(rank, w));
        CollectiveException cause = broken;
        if (cause != null) {
            work.fail(cause);
            return work;
        }
        Round round = rounds.computeIfAbsent(call.sequence(), s -> new Round());
        boolean last;
        synchronized (round) {
            round.calls[rank] = call;
            round.works[rank] = work;
            last = ++round.arrived == size;
        }
        if (last) {
            rounds.remove(call.sequence());
            computing.execute(() -> finish(round));
        } else if (broken != null) {
            work.fail(broken);
        }
        return work;
    }

    /**
     * A send or recv of rank {@code rank} ({@code call.root()} is the peer): a send's data is
     * copied at once and waits for its receive (the send completes); a receive takes the oldest
     * such copy from its peer with its tag, or waits for one.
     */
    PendingWork message(int rank, Collective call, Duration timeout) {
        PendingWork work = new PendingWork(
                call,
                timeout,
                w -> new CollectiveTimeoutException(
                        name + " rank " + rank + ": " + call.describe() + " timed out: rank " + call.root()
                                + " sent no message with tag " + call.tag(),
                        null,
                        rank,
                        call,
                        List.of(call.root())));
        CollectiveException cause = broken;
        if (cause != null) {
            work.fail(cause);
            return work;
        }
        boolean sending = call.kind() == dev.cohort.api.collective.OpKind.SEND;
        List<Integer> pair = sending ? List.of(rank, call.root(), call.tag()) : List.of(call.root(), rank, call.tag());
        Mailbox box = mailboxes.computeIfAbsent(pair, p -> new Mailbox());
        synchronized (box) {
            if (sending) {
                box.sent.add(call.input().copy());
                work.complete();
            } else {
                box.waiting.add(new Object[] {call, work});
            }
            while (!box.sent.isEmpty() && !box.waiting.isEmpty()) {
                Object[] receive = box.waiting.poll();
                PendingWork w = (PendingWork) receive[1];
                if (w.isDone()) {
                    continue; // timed out
                }
                DenseBuffer message = box.sent.poll();
                DenseBuffer into = ((Collective) receive[0]).input();
                if (message.byteSize() != into.byteSize()) {
                    w.fail(new CollectiveException(
                            name + ": " + ((Collective) receive[0]).describe() + ": the message holds "
                                    + message.byteSize() + " bytes but this receive's buffer " + into.byteSize()));
                } else {
                    into.copyFrom(DenseBuffer.of(bytesOf(message), into.dataType()));
                    w.complete();
                }
            }
        }
        return work;
    }

    /** A heap buffer's elements as native-order bytes, for a copy into a buffer of another type of the same size. */
    private static java.nio.ByteBuffer bytesOf(DenseBuffer b) {
        java.nio.ByteBuffer bytes =
                java.nio.ByteBuffer.allocate((int) b.byteSize()).order(java.nio.ByteOrder.nativeOrder());
        DenseBuffer.of(bytes, b.dataType()).copyFrom(b);
        return bytes.clear();
    }

    /** The messages of one sender to one receiver with one tag, and the receives waiting for them. */
    private static final class Mailbox {
        final java.util.ArrayDeque<DenseBuffer> sent = new java.util.ArrayDeque<>();
        final java.util.ArrayDeque<Object[]> waiting = new java.util.ArrayDeque<>();
    }

    /** Fails everything pending now and everything issued later. */
    void breakWith(CollectiveException cause) {
        synchronized (this) {
            if (broken == null) {
                broken = cause;
            }
        }
        for (Mailbox box : mailboxes.values()) {
            synchronized (box) {
                for (Object[] receive : box.waiting) {
                    ((PendingWork) receive[1]).fail(broken);
                }
                box.waiting.clear();
            }
        }
        for (Round round : rounds.values()) {
            synchronized (round) {
                for (PendingWork w : round.works) {
                    if (w != null) {
                        w.fail(broken);
                    }
                }
            }
        }
    }

    private CollectiveException timedOut(int rank, PendingWork work) {
        Collective call = work.collective();
        Round round = rounds.get(call.sequence());
        List<Integer> missing = new ArrayList<>();
        if (round != null) {
            synchronized (round) {
                for (int r = 0; r < size; r++) {
                    if (round.calls[r] == null) {
                        missing.add(r);
                    }
                }
            }
        }
        CollectiveTimeoutException e = new CollectiveTimeoutException(
                name + " rank " + rank + ": " + call.describe() + " timed out; "
                        + (missing.isEmpty() ? "all ranks had joined" : "rank(s) " + missing + " never joined"),
                null,
                rank,
                call,
                missing);
        breakWith(e);
        return e;
    }

    private void finish(Round round) {
        Collective[] calls = round.calls;
        String expected = calls[0].signature();
        for (int r = 1; r < size; r++) {
            if (!calls[r].signature().equals(expected)) {
                StringBuilder m =
                        new StringBuilder(name + ": ranks disagree on collective #" + calls[0].sequence() + ":");
                for (int q = 0; q < size; q++) {
                    m.append("\n  rank ").append(q).append(": ").append(calls[q].signature());
                }
                CollectiveMismatchException e = new CollectiveMismatchException(m.toString());
                for (PendingWork w : round.works) {
                    w.fail(e);
                }
                breakWith(e);
                return;
            }
        }
        if (calls[0].kind() == dev.cohort.api.collective.OpKind.ALLTOALLV) {
            int[][] send = new int[size][];
            int[][] receive = new int[size][];
            for (int r = 0; r < size; r++) {
                send[r] = calls[r].counts();
                receive[r] = calls[r].receiveCounts();
            }
            String disagreement = AlltoallCounts.disagreement(name + ": " + calls[0].describe(), send, receive);
            if (disagreement != null) {
                CollectiveMismatchException e = new CollectiveMismatchException(disagreement);
                for (PendingWork w : round.works) {
                    w.fail(e);
                }
                breakWith(e);
                return;
            }
        }
        try {
            compute(calls);
        } catch (RuntimeException e) {
            CollectiveException failure =
                    new CollectiveException(name + ": " + calls[0].describe() + " failed: " + e, e);
            for (PendingWork w : round.works) {
                w.fail(failure);
            }
            breakWith(failure);
            return;
        }
        for (PendingWork w : round.works) {
            w.complete();
        }
    }

    private void compute(Collective[] calls) {
        Collective first = calls[0];
        switch (first.kind()) {
            case BARRIER -> {}
            case BROADCAST -> {
                DenseBuffer source = calls[first.root()].input();
                for (int r = 0; r < size; r++) {
                    if (r != first.root()) {
                        calls[r].input().copyFrom(source);
                    }
                }
            }
            case ALLREDUCE -> {
                DenseBuffer result = reduce(calls, c -> c.input(), first);
                for (Collective c : calls) {
                    c.input().copyFrom(result);
                }
            }
            case REDUCE_SCATTER -> {
                DenseBuffer result = reduce(calls, c -> c.input(), first);
                int block = first.output().count();
                for (int r = 0; r < size; r++) {
                    calls[r].output().copyFrom(result.slice(r * block, block));
                }
            }
            case ALLGATHER -> {
                int block = first.input().count();
                for (Collective target : calls) {
                    for (int s = 0; s < size; s++) {
                        target.output().slice(s * block, block).copyFrom(calls[s].input());
                    }
                }
            }
            case ALLGATHERV -> {
                int[] counts = first.counts();
                for (Collective target : calls) {
                    int offset = 0;
                    for (int s = 0; s < size; s++) {
                        target.output().slice(offset, counts[s]).copyFrom(calls[s].input());
                        offset += counts[s];
                    }
                }
            }
            case REDUCE -> calls[first.root()].input().copyFrom(reduce(calls, c -> c.input(), first));
            case GATHER, GATHERV -> {
                DenseBuffer target = calls[first.root()].output();
                int offset = 0;
                for (Collective c : calls) {
                    target.slice(offset, c.input().count()).copyFrom(c.input());
                    offset += c.input().count();
                }
            }
            case SCATTER, SCATTERV -> {
                DenseBuffer source = calls[first.root()].input();
                int offset = 0;
                for (Collective c : calls) {
                    c.output().copyFrom(source.slice(offset, c.output().count()));
                    offset += c.output().count();
                }
            }
            case ALLTOALL -> {
                int block = first.input().count() / size;
                for (int i = 0; i < size; i++) {
                    for (int j = 0; j < size; j++) {
                        calls[j].output()
                                .slice(i * block, block)
                                .copyFrom(calls[i].input().slice(j * block, block));
                    }
                }
            }
            case ALLTOALLV -> {
                for (int j = 0; j < size; j++) {
                    int into = 0;
                    for (int i = 0; i < size; i++) {
                        int[] sent = calls[i].counts();
                        int from = 0;
                        for (int k = 0; k < j; k++) {
                            from += sent[k];
                        }
                        calls[j].output()
                                .slice(into, sent[j])
                                .copyFrom(calls[i].input().slice(from, sent[j]));
                        into += sent[j];
                    }
                }
            }
        }
    }

    private DenseBuffer reduce(
            Collective[] calls, java.util.function.Function<Collective, DenseBuffer> operand, Collective first) {
        DenseBuffer acc = operand.apply(calls[0]).copy();
        if (acc.dataType().isHalfPrecision()) {
            java.util.List<DenseBuffer> operands = new java.util.ArrayList<>(size);
            for (Collective c : calls) {
                operands.add(operand.apply(c));
            }
            Reduction.foldHalves(first.op(), operands, acc, size);
            return acc;
        }
        for (int r = 1; r < size; r++) {
            Reduction.accumulate(first.op(), acc, operand.apply(calls[r]));
        }
        Reduction.finish(first.op(), acc, size);
        return acc;
    }

    private final class Round {
        final Collective[] calls = new Collective[size];
        final PendingWork[] works = new PendingWork[size];
        int arrived;
    }
}
