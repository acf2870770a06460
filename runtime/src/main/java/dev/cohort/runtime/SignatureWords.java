package dev.cohort.runtime;

import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.OpKind;
import dev.cohort.api.collective.ReduceOp;
import java.util.Arrays;

/**
 * A collective's {@link Collective#signature() signature} packed into {@value #WORDS} 64-bit words,
 * for engines that compare the ranks' calls by exchanging them (Gloo gathers every rank's words
 * before trusting a result).
 *
 * <p>Words: {@code [0]} kind, type, reduce op and root packed in bytes; {@code [1]} the length
 * that must agree ({@link Collective#agreedLength()}: for allgatherv, gatherv and scatterv the sum
 * of the counts); {@code [2]} the hash of those counts, else 0; {@code [3]} the sequence number.
 * All-to-all-v's per-pair counts are not in the words: engines check them apart
 * ({@link AlltoallCounts}).
 */
public final class SignatureWords {

    /** Words per signature. */
    public static final int WORDS = 4;

    private SignatureWords() {}

    /** Writes {@code call}'s words at {@code into[offset..offset+WORDS)}. */
    public static void encode(Collective call, long[] into, int offset) {
        DataType type = call.dataType();
        long head = call.kind().ordinal()
                | (long) (type == null ? 0 : type.ordinal() + 1) << 8
                | (long) (call.op() == null ? 0 : call.op().ordinal() + 1) << 16
                | (long) (call.root() + 1) << 32;
        long length = 0;
        long countsHash = 0;
        if (type != null) {
            length = call.agreedLength();
            if (call.kind().hasSharedCounts()) {
                countsHash = Arrays.hashCode(call.counts()) & 0xffffffffL;
            }
        }
        into[offset] = head;
        into[offset + 1] = length;
        into[offset + 2] = countsHash;
        into[offset + 3] = call.sequence();
    }

    /** The words at {@code offset} in the words of {@link Collective#signature()} (allgatherv counts as a hash). */
    public static String describe(long[] words, int offset) {
        long head = words[offset];
        int kind = (int) (head & 0xff);
        int type = (int) (head >>> 8 & 0xff);
        int op = (int) (head >>> 16 & 0xff);
        int root = (int) (head >>> 32) - 1;
        OpKind[] kinds = OpKind.values();
        if (kind >= kinds.length || type > DataType.values().length || op > ReduceOp.values().length) {
            return "unreadable signature " + Long.toHexString(head);
        }
        OpKind k = kinds[kind];
        StringBuilder s = new StringBuilder(k.label());
        if (type > 0) {
            s.append(' ').append(DataType.values()[type - 1].label());
            if (k.hasSharedCounts()) {
                s.append(" counts(total ")
                        .append(words[offset + 1])
                        .append(", hash ")
                        .append(Long.toHexString(words[offset + 2]))
                        .append(')');
            } else if (k != OpKind.ALLTOALLV) {
                s.append('[').append(words[offset + 1]).append(']');
            }
        }
        if (op > 0) {
            s.append(' ').append(ReduceOp.values()[op - 1]);
        }
        if (root >= 0) {
            s.append(" root=").append(root);
        }
        return s.toString();
    }

    /**
     * Compares the {@code size} ranks' words laid out one after another in {@code all}.
     *
     * @return {@code null} when every rank issued the same call; else a message naming each rank's call
     */
    public static String disagreement(String who, long[] all, int size) {
        boolean same = true;
        for (int r = 1; r < size && same; r++) {
            same = Arrays.equals(all, 0, WORDS, all, r * WORDS, (r + 1) * WORDS);
        }
        if (same) {
            return null;
        }
        StringBuilder m = new StringBuilder(who)
                .append(": ranks disagree on collective #")
                .append(all[3])
                .append(':');
        for (int r = 0; r < size; r++) {
            long seq = all[r * WORDS + 3];
            m.append("\n  rank ").append(r).append(": ").append(describe(all, r * WORDS));
            if (seq != all[3]) {
                m.append(" (its #").append(seq).append(')');
            }
        }
        return m.toString();
    }
}
