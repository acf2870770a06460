package dev.cohort.api;

import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.collective.ReduceOp;
import java.util.List;
import java.util.Objects;

/**
 * Training on uneven inputs (DDP's {@code Join}, Horovod's {@code join()}): ranks that hold
 * different numbers of batches train inside one join scope; a rank that runs out closes its scope
 * and then answers the others' collectives, contributing nothing, until every rank has closed its
 * scope. Averages count only the ranks still training, so the result equals training on the data
 * that exists.
 *
 * <pre>{@code
 * try (Join join = backend.join(optimizer)) {
 *     for (MiniBatch b : myBatches) {          // 100 here, 73 on another rank
 *         optimizer.zero_grad();
 *         loss(model, b).backward();
 *         optimizer.step();
 *         double mean = backend.averageAll(loss);   // over the ranks still training
 *     }
 * }
 * }</pre>
 *
 * <p>How: before each of its collectives a participant still training <em>announces</em> it with
 * one small allreduce on the world group (which participant, which phase, one argument); a rank
 * that joined takes part in the same allreduce with zeros, so it learns how many ranks still
 * train and what they do next, and repeats that with nothing of its own ({@link Participant#shadow}):
 * the torch integration's optimizer averages zero gradients, scaled to count only the ranks still
 * training, and steps like the others, so every rank ends with the same model. When every rank has
 * joined, the announcement counts none and every scope closes. {@link DistributedBackend#averageAll}
 * announces itself the same way inside a scope.
 *
 * <p>Every rank opens the scope at the same point with the same participants, in the same order.
 * Inside it, collectives that are not announced (a participant's own, issued directly on the
 * group; {@code SyncBatchNorm}) cannot be answered by a rank that joined: they fail with a
 * mismatch. Each announcement waits up to the group's timeout, so the ranks still training must
 * reach their next announced collective within it.
 */
public final class Join implements AutoCloseable {

    /** Who takes part in a join scope: issues collectives the scope announces, and repeats them once joined. */
    public interface Participant {

        /** The scope opened: from now on announce each group of collectives with {@link Join#announce}. */
        void enter(Join join);

        /**
         * On a rank that joined: repeat what a participant of the ranks still training announced
         * ({@code phase}, {@code argument}), contributing nothing.
         *
         * @param activeRanks how many ranks still train (at least 1)
         */
        void shadow(int phase, long argument, int activeRanks);

        /** Every rank has joined: the scope is over. */
        void leave();
    }

    /** The announcement's words: ranks training, who (0: the backend's averageAll), phase, argument's high and low halves. */
    private static final int WORDS = 5;

    private final DistributedBackend backend;
    private final ProcessGroup group;
    private final List<Participant> participants;
    private boolean joined;
    private boolean closed;

    Join(DistributedBackend backend, ProcessGroup group, List<Participant> participants) {
        this.backend = backend;
        this.group = group;
        this.participants = List.copyOf(participants);
        for (Participant p : this.participants) {
            p.enter(this);
        }
    }

    /** Whether this rank has joined (closed its scope and now answers the others). */
    public boolean joined() {
        return joined;
    }

    /**
     * Announces that {@code who} (a participant of this scope) issues its collectives of
     * {@code phase} next, with {@code argument}; returns how many ranks still train, this one
     * included. Every rank still training announces the same.
     *
     * @throws IllegalStateException on a rank that joined (it only shadows)
     */
    public int announce(Participant who, int phase, long argument) {
        int index = participants.indexOf(Objects.requireNonNull(who, "who"));
        if (index < 0) {
            throw new IllegalArgumentException(who + " is not a participant of this join scope");
        }
        return announceAs(index + 1, phase, argument);
    }

    /** {@link DistributedBackend#averageAll} of {@code count} elements of {@code type}: returns how many ranks still train. */
    int announceAverage(DataType type, int count) {
        return announceAs(0, type.ordinal(), count);
    }

    private int announceAs(int who, int phase, long argument) {
        if (joined) {
            throw new IllegalStateException("rank " + group.rank() + " has joined: it cannot announce collectives");
        }
        long[] words = {1, who, phase, argument >>> 32, argument & 0xffffffffL};
        group.allreduce(DenseBuffer.of(words), ReduceOp.SUM).await();
        return (int) words[0];
    }

    /**
     * This rank has no more data: answers the others' announced collectives until every rank has
     * joined. Idempotent.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        joined = true;
        try {
            while (true) {
                long[] words = new long[WORDS];
                group.allreduce(DenseBuffer.of(words), ReduceOp.SUM).await();
                int active = (int) words[0];
                if (active == 0) {
                    break;
                }
                int who = (int) (words[1] / active);
                int phase = (int) (words[2] / active);
                long argument = (words[3] / active) << 32 | (words[4] / active);
                if (who == 0) {
                    // averageAll: the sum of the ranks still training, with zeros from here
                    DenseBuffer zeros = DenseBuffer.allocate(DataType.values()[phase], (int) argument);
                    group.allreduce(zeros, ReduceOp.SUM).await();
                } else {
                    participants.get(who - 1).shadow(phase, argument, active);
                }
            }
        } finally {
            backend.joinEnded(this);
            for (Participant p : participants) {
                p.leave();
            }
        }
    }
}
