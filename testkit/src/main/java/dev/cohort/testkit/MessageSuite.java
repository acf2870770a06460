package dev.cohort.testkit;

import dev.cohort.api.collective.CollectiveException;
import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.collective.Work;
import java.util.ArrayList;
import java.util.List;

/**
 * Send and recv on any engine: every rank runs {@link #run} on its group. Around a ring (each
 * rank sends to the next and receives from the one before) every data type at 0, 1, 1009 and
 * 4 Mi + 3 elements, heap and direct; receives posted before their sends and after them; tags
 * received out of order; several messages of one tag in order; and a receive of the wrong length,
 * which fails naming both lengths while the messages after it still arrive.
 */
public final class MessageSuite extends RankChecks {

    private final ProcessGroup group;

    private MessageSuite(ProcessGroup group) {
        super(group);
        this.group = group;
    }

    /**
     * Runs every case on every rank of {@code group}.
     *
     * @return the number of checks made
     */
    public static int run(ProcessGroup group) {
        MessageSuite suite = new MessageSuite(group);
        if (suite.n >= 2) {
            suite.ring();
            suite.tagsOutOfOrder();
            suite.wrongLength();
        }
        group.barrier().await();
        return suite.checks();
    }

    private void ring() {
        int next = (rank + 1) % n;
        int before = (rank + n - 1) % n;
        int id = 0;
        for (DataType type : DataType.values()) {
            for (int count : new int[] {0, 1, 1009}) {
                for (boolean direct : new boolean[] {false, true}) {
                    exchange(type, count, direct, next, before, id++, id % 2 == 0);
                }
            }
        }
        exchange(DataType.FLOAT32, ConformanceSuite.LARGE, true, next, before, id++, true);
        exchange(DataType.INT64, ConformanceSuite.LARGE, false, next, before, id, false);
    }

    /** One message to {@code next}, one from {@code before}; the receive posted first when {@code receiveFirst}. */
    private void exchange(
            DataType type, int count, boolean direct, int next, int before, int tag, boolean receiveFirst) {
        DenseBuffer out = buffer(type, count, direct);
        for (int i = 0; i < count; i++) {
            out.setDouble(i, value(type, rank, tag, i));
        }
        DenseBuffer in = buffer(type, count, !direct);
        Work receive = receiveFirst ? group.recv(in, before, tag) : null;
        Work send = group.send(out, next, tag);
        if (receive == null) {
            receive = group.recv(in, before, tag);
        }
        receive.await();
        send.await();
        String what = "message " + type.label() + "[" + count + "] tag " + tag + " from rank " + before;
        sampled(count, i -> check(what + " element " + i, in.getDouble(i), value(type, before, tag, i)));
    }

    /** Tags 1000 and 1001 sent in that order and received the other way round; three of tag 1002 in order. */
    private void tagsOutOfOrder() {
        if (rank == 0) {
            List<Work> sends = new ArrayList<>();
            sends.add(group.send(DenseBuffer.of(new long[] {1000}), 1, 1000));
            sends.add(group.send(DenseBuffer.of(new long[] {1001}), 1, 1001));
            for (long k = 0; k < 3; k++) {
                sends.add(group.send(DenseBuffer.of(new long[] {k}), 1, 1002));
            }
            sends.forEach(Work::await);
        } else if (rank == 1) {
            long[] second = new long[1];
            long[] first = new long[1];
            group.recv(DenseBuffer.of(second), 0, 1001).await();
            group.recv(DenseBuffer.of(first), 0, 1000).await();
            check("tag 1001 received first", second[0], 1001.0);
            check("tag 1000 received second", first[0], 1000.0);
            for (long k = 0; k < 3; k++) {
                long[] one = new long[1];
                group.recv(DenseBuffer.of(one), 0, 1002).await();
                check("message " + k + " of tag 1002 in order", one[0], (double) k);
            }
        }
    }

    /** A receive one element longer than the message fails naming both; the next message arrives. */
    private void wrongLength() {
        if (rank == 0) {
            group.send(DenseBuffer.of(new float[] {1, 2, 3}), 1, 2000).await();
            group.send(DenseBuffer.of(new float[] {4}), 1, 2001).await();
        } else if (rank == 1) {
            try {
                group.recv(DenseBuffer.of(new float[4]), 0, 2000).await();
                throw new AssertionError("rank 1: a receive of 16 bytes took a message of 12");
            } catch (CollectiveException expected) {
                check(
                        "the refusal names the message's length",
                        expected.getMessage().contains("12") ? 1 : 0,
                        1);
            }
            float[] after = new float[1];
            group.recv(DenseBuffer.of(after), 0, 2001).await();
            check("the message after a refused one", after[0], 4);
        }
    }

    private static DenseBuffer buffer(DataType type, int count, boolean direct) {
        return direct ? DenseBuffer.allocateDirect(type, count) : DenseBuffer.allocate(type, count);
    }

    /** Exactly representable in every type (16-bit floats included). */
    private static double value(DataType type, int r, int tag, int i) {
        int k = (r * 31 + tag * 7 + i * 13) % 200 - 100;
        return type.isHalfPrecision() ? k / 4.0 : k;
    }

    private static void sampled(int count, java.util.function.IntConsumer body) {
        int step = Math.max(1, count / 50_000);
        for (int i = 0; i < count; i += step) {
            body.accept(i);
        }
        if (count > 0) {
            body.accept(count - 1);
        }
    }

    private void check(String what, double actual, double expected) {
        check(actual == expected, what, actual, expected);
    }
}
