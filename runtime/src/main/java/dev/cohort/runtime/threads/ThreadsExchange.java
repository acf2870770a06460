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
    private final ThreadPoolExecutor computing;

    ThreadsExchange(String name, int size) {
        this.name = name;
        this.size = size;
        this.computing = new ThreadPoolExecutor(0, 1, 1, TimeUnit.SECONDS, new LinkedBlockingQueue<>(),
                Daemons.named("cohort-threads-" + name.replace(' ', '-')));
    }

    int size() {
        return size;
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

    /** Fails everything pending now and everything issued later. */
    void breakWith(CollectiveException cause) {
        synchronized (this) {
            if (broken == null) {
                broken = cause;
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
        CollectiveTimeoutException e = new CollectiveTimeoutException(name + " rank " + rank + ": " + call.describe()
                + " timed out; " + (missing.isEmpty() ? "all ranks had joined" : "rank(s) " + missing + " never joined"),
                null, rank, call, missing);
        breakWith(e);
        return e;
    }

    private void finish(Round round) {
        Collective[] calls = round.calls;
        String expected = calls[0].signature();
        for (int r = 1; r < size; r++) {
            if (!calls[r].signature().equals(expected)) {
                StringBuilder m = new StringBuilder(name + ": ranks disagree on collective #" + calls[0].sequence() + ":");
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
            CollectiveException failure = new CollectiveException(name + ": " + calls[0].describe() + " failed: " + e, e);
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
            case BARRIER -> { }
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
                        calls[j].output().slice(i * block, block).copyFrom(calls[i].input().slice(j * block, block));
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
                        calls[j].output().slice(into, sent[j]).copyFrom(calls[i].input().slice(from, sent[j]));
                        into += sent[j];
                    }
                }
            }
        }
    }

    private DenseBuffer reduce(Collective[] calls, java.util.function.Function<Collective, DenseBuffer> operand,
                               Collective first) {
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
