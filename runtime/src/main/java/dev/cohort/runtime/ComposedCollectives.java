package dev.cohort.runtime;

import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.CollectiveException;
import dev.cohort.api.collective.CollectiveMismatchException;
import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.Work;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * Reduce, gather(v), scatter(v) and all-to-all(v) composed from the five collectives every engine
 * runs, for engines that do not run them themselves ({@link AbstractProcessGroup#runsNatively}).
 * Correct everywhere, not frugal: reduce is an allreduce (the other ranks reduce a copy), gather
 * an allgather, scatter a broadcast of the root's whole input, and all-to-all an allgather of
 * every input, from which each rank keeps its blocks; all-to-all-v first gathers every rank's
 * counts (awaited at the call) so that every rank checks every pair.
 *
 * <p>The parts do not say what they compose: a reduce and an allreduce, or gathers to different
 * roots, issue the same parts, which the engine's own check cannot tell apart. So every composed
 * call first gathers every rank's {@link SignatureWords} (awaited at the call) and fails on every
 * rank, naming each rank's call, where they differ.
 */
final class ComposedCollectives {

    private ComposedCollectives() {}

    static Work start(AbstractProcessGroup group, Collective call, Duration timeout) {
        agree(group, call, timeout);
        int n = group.size();
        int me = group.rank();
        boolean root = me == call.root();
        DataType type = call.dataType();
        return switch (call.kind()) {
            case REDUCE ->
                new Then(
                        call,
                        group.startAllreduce(root ? call.input() : call.input().copy(), call.op(), timeout),
                        null);
            case GATHER ->
                new Then(
                        call,
                        group.startAllgather(
                                call.input(),
                                root
                                        ? call.output()
                                        : DenseBuffer.allocate(
                                                type, call.input().count() * n),
                                timeout),
                        null);
            case GATHERV ->
                new Then(
                        call,
                        group.startAllgatherv(
                                call.input(),
                                root ? call.output() : DenseBuffer.allocate(type, (int) call.agreedLength()),
                                call.counts(),
                                timeout),
                        null);
            case SCATTER, SCATTERV -> {
                int[] counts = call.counts() != null
                        ? call.counts()
                        : uniform(n, call.output().count());
                DenseBuffer source = root ? call.input() : DenseBuffer.allocate(type, (int) sum(counts, n));
                Work broadcast = group.startBroadcast(source, call.root(), timeout);
                long from = sum(counts, me);
                yield new Then(call, broadcast, () -> call.output().copyFrom(source.slice((int) from, counts[me])));
            }
            case ALLTOALL -> {
                int block = call.input().count() / n;
                DenseBuffer all = DenseBuffer.allocate(type, call.input().count() * n);
                Work allgather = group.startAllgather(call.input(), all, timeout);
                yield new Then(call, allgather, () -> {
                    for (int i = 0; i < n; i++) {
                        call.output().slice(i * block, block).copyFrom(all.slice((i * n + me) * block, block));
                    }
                });
            }
            case ALLTOALLV -> alltoallv(group, call, timeout);
            default -> throw new IllegalStateException(call.kind().label() + " cannot be composed");
        };
    }

    private static Work alltoallv(AbstractProcessGroup group, Collective call, Duration timeout) {
        int n = group.size();
        int me = group.rank();
        int[] everyCount = new int[2 * n * n];
        group.startAllgather(
                        DenseBuffer.of(AlltoallCounts.packed(call.counts(), call.receiveCounts())),
                        DenseBuffer.of(everyCount),
                        timeout)
                .await();
        String what = group.who() + ": " + call.describe();
        String disagreement = AlltoallCounts.disagreement(what, everyCount, n);
        if (disagreement != null) {
            throw new CollectiveMismatchException(disagreement, null, me, call, List.of());
        }
        int[] sent = new int[n];
        for (int i = 0; i < n; i++) {
            sent[i] = (int) sum(everyCount, 2 * n * i, n);
        }
        DenseBuffer all = DenseBuffer.allocate(call.dataType(), (int) sum(sent, n));
        Work allgatherv = group.startAllgatherv(call.input(), all, sent, timeout);
        return new Then(call, allgatherv, () -> {
            long blockOfI = 0;
            long into = 0;
            for (int i = 0; i < n; i++) {
                long at = blockOfI + sum(everyCount, 2 * n * i, me);
                int length = everyCount[2 * n * i + me];
                call.output().slice((int) into, length).copyFrom(all.slice((int) at, length));
                into += length;
                blockOfI += sent[i];
            }
        });
    }

    /**
     * Gathers every rank's signature of its call; throws a {@link CollectiveMismatchException}
     * naming each rank's call where they differ (every rank sees all of them, so every rank throws).
     */
    static void agree(AbstractProcessGroup group, Collective call, Duration timeout) {
        int n = group.size();
        long[] mine = new long[SignatureWords.WORDS];
        SignatureWords.encode(call, mine, 0);
        long[] every = new long[SignatureWords.WORDS * n];
        group.startAllgather(DenseBuffer.of(mine), DenseBuffer.of(every), timeout)
                .await();
        String disagreement = disagreement(every, n);
        if (disagreement != null) {
            throw new CollectiveMismatchException(
                    group.who() + ": " + call.describe() + ": the ranks issued different collectives: " + disagreement,
                    null,
                    group.rank(),
                    call,
                    List.of());
        }
    }

    /** Null where the {@code n} ranks' signatures in {@code every} agree, else each distinct call and its ranks. */
    static String disagreement(long[] every, int n) {
        java.util.Map<String, List<Integer>> ranksByCall = new java.util.LinkedHashMap<>();
        for (int r = 0; r < n; r++) {
            int at = r * SignatureWords.WORDS;
            String described = SignatureWords.describe(every, at) + " (call " + every[at + 3] + ")";
            ranksByCall
                    .computeIfAbsent(described, k -> new java.util.ArrayList<>())
                    .add(r);
        }
        if (ranksByCall.size() == 1) {
            return null;
        }
        StringBuilder out = new StringBuilder();
        ranksByCall.forEach((described, ranks) -> out.append(out.length() == 0 ? "" : "; ")
                .append(ranks.size() == 1 ? "rank " + ranks.get(0) : "ranks " + ranks)
                .append(": ")
                .append(described));
        return out.toString();
    }

    private static int[] uniform(int n, int count) {
        int[] counts = new int[n];
        java.util.Arrays.fill(counts, count);
        return counts;
    }

    /** The sum of the first {@code k} counts. */
    private static long sum(int[] counts, int k) {
        return sum(counts, 0, k);
    }

    private static long sum(int[] counts, int from, int k) {
        long s = 0;
        for (int i = from; i < from + k; i++) {
            s += counts[i];
        }
        return s;
    }

    /**
     * The last step of a composition and what follows it (copying the result into place), run
     * once by whoever first sees the step done without a failure.
     */
    private static final class Then implements Work, FlightTracked {
        private final Collective call;
        private final Work last;
        private Runnable after;
        private long ticket;
        private volatile dev.cohort.runtime.flight.FlightRecorder recorder;

        Then(Collective call, Work last, Runnable after) {
            this.call = call;
            this.last = last;
            this.after = after;
        }

        @Override
        public Collective collective() {
            return call;
        }

        @Override
        public boolean isDone() {
            if (!last.isDone()) {
                return false;
            }
            if (last.failure().isEmpty()) {
                finish();
            }
            settled();
            return true;
        }

        @Override
        public void recordedAs(dev.cohort.runtime.flight.FlightRecorder recorder, long ticket) {
            this.ticket = ticket;
            this.recorder = recorder;
            isDone();
        }

        private void settled() {
            var r = recorder;
            if (r != null) {
                r.settled(ticket, last.failure().isPresent());
            }
        }

        @Override
        public Optional<CollectiveException> failure() {
            return last.failure();
        }

        @Override
        public void await() {
            try {
                last.await();
                finish();
            } finally {
                if (last.isDone()) {
                    settled();
                }
            }
        }

        @Override
        public void await(Duration timeout) {
            try {
                last.await(timeout);
                finish();
            } finally {
                if (last.isDone()) {
                    settled();
                }
            }
        }

        private synchronized void finish() {
            if (after != null) {
                Runnable r = after;
                after = null;
                r.run();
            }
        }
    }
}
