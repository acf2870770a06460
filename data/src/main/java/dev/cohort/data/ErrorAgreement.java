package dev.cohort.data;

import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ObjectCollectives;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.collective.ReduceOp;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Makes a read error on one rank an error on every rank, so that the others do not wait for it in
 * their next collective: the ranks agree on a status (one int, MAX) before a batch, and when any
 * failed they share the failures' descriptions and all throw the lowest failed rank's. The status
 * also says how many batches each rank holds ready; the fewest are batches no rank can fail on,
 * so the next agreement comes after them (one small allreduce every few steps, not each step).
 */
final class ErrorAgreement {

    private static final char SEPARATOR = '\u0000';
    private static final int FAILED = Integer.MAX_VALUE;

    private ErrorAgreement() {}

    /**
     * Returns, when no rank failed, the fewest batches any rank holds ready; else throws on every
     * rank.
     *
     * @param local this rank's failure, or null
     * @param ready the batches this rank holds ready (at least 1 when {@code local} is null)
     */
    static int agree(ProcessGroup group, RuntimeException local, int ready) {
        int[] status = {local == null ? -ready : FAILED}; // MAX: any failure, else minus the fewest ready
        group.allreduce(DenseBuffer.of(status), ReduceOp.MAX).await();
        if (status[0] != FAILED) {
            return -status[0];
        }
        byte[] mine = local == null ? new byte[0] : encode(local).getBytes(StandardCharsets.UTF_8);
        List<byte[]> all = ObjectCollectives.allgatherBytes(group, mine);
        for (int r = 0; r < all.size(); r++) {
            if (all.get(r).length > 0) {
                DataException shared =
                        decode(new String(all.get(r), StandardCharsets.UTF_8), r, r == group.rank() ? local : null);
                if (r != group.rank() && local != null) {
                    shared.addSuppressed(local);
                }
                throw shared;
            }
        }
        throw new IllegalStateException("a rank reported a failure but sent no description");
    }

    private static String encode(RuntimeException e) {
        if (e instanceof DataException d) {
            return String.join(
                    String.valueOf(SEPARATOR),
                    d.file() == null ? "" : d.file(),
                    Integer.toString(d.rowGroup()),
                    d.column() == null ? "" : d.column(),
                    d.what());
        }
        return String.join(String.valueOf(SEPARATOR), "", "-1", "", String.valueOf(e));
    }

    private static DataException decode(String text, int rank, RuntimeException cause) {
        String[] parts = text.split(String.valueOf(SEPARATOR), 4);
        return new DataException(
                parts[0].isEmpty() ? null : parts[0],
                Integer.parseInt(parts[1]),
                parts[2].isEmpty() ? null : parts[2],
                rank,
                parts[3],
                cause);
    }
}
