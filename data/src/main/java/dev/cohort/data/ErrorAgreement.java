package dev.cohort.data;

import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ObjectCollectives;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.collective.ReduceOp;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Makes a read error on one rank an error on every rank, so that the others do not wait for it in
 * their next collective: the ranks agree on a status (one int, MAX) before each batch, and when
 * any failed they share the failures' descriptions and all throw the lowest failed rank's.
 */
final class ErrorAgreement {

    private static final char SEPARATOR = '\u0000';

    private ErrorAgreement() {}

    /**
     * Returns when no rank failed; else throws on every rank.
     *
     * @param local this rank's failure, or null
     */
    static void agree(ProcessGroup group, RuntimeException local) {
        int[] status = {local == null ? 0 : 1};
        group.allreduce(DenseBuffer.of(status), ReduceOp.MAX).await();
        if (status[0] == 0) {
            return;
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
