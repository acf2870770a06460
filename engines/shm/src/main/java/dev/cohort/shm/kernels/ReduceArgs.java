package dev.cohort.shm.kernels;

import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.ReduceOp;
import java.lang.foreign.MemorySegment;
import java.util.Objects;
import java.util.function.IntFunction;

/**
 * The operands of one {@link ReduceKernels#reduce} call: a mutable flyweight that its caller
 * owns and refills for every call, so that calling a kernel allocates nothing (a group keeps one
 * under its runner lock; the general path's staging arrays are made on first use and kept). Not
 * thread-safe.
 *
 * <p>The words (see {@link ReduceKernels}): {@code count} elements are reduced over {@code ranks}
 * operands; operand j starts at byte {@code term(j)} of the mapping {@code shm}, except this
 * rank's own ({@code self}), which is read from {@code own} at {@code ownOffset}. The result goes
 * to {@code out} at {@code outOffset} and to each of the {@code results} offsets of {@code shm}
 * (none after {@link #noResults()}). The result may be written exactly over the own operand, and
 * a result copy exactly over a term (as an allreduce in place does), but not partly over either.
 */
public final class ReduceArgs {

    DataType type;
    ReduceOp op;
    int ranks;
    int self;
    MemorySegment own;
    long ownOffset;
    MemorySegment shm;
    final long[] terms;
    long count;
    MemorySegment out;
    long outOffset;
    final long[] results;
    int resultCount;
    /** The general path's arrays, made on first use: per element type (by ordinal), the accumulator's and an operand's. */
    private final Object[] staging = new Object[STAGING_PER_TYPE * DataType.values().length];

    /** For groups of at most {@code maxRanks} ranks; at most {@code maxRanks} result copies. */
    public ReduceArgs(int maxRanks) {
        this.terms = new long[Math.max(2, maxRanks)];
        this.results = new long[Math.max(2, maxRanks)];
    }

    /** How many elements each operand has. */
    public ReduceArgs count(long count) {
        this.count = count;
        return this;
    }

    /** The element type and the operation. */
    public ReduceArgs op(DataType type, ReduceOp op) {
        this.type = Objects.requireNonNull(type, "type");
        this.op = Objects.requireNonNull(op, "op");
        return this;
    }

    /** {@code ranks} operands, of which {@code self} is this rank's (read from {@link #own}). */
    public ReduceArgs ranks(int ranks, int self) {
        if (ranks > terms.length) {
            throw new IllegalArgumentException(ranks + " ranks, made for at most " + terms.length);
        }
        Objects.checkIndex(self, ranks);
        this.ranks = ranks;
        this.self = self;
        return this;
    }

    /** The mapping the other operands (see {@link #term}) and the result copies lie in. */
    public ReduceArgs shm(MemorySegment shm) {
        this.shm = Objects.requireNonNull(shm, "shm");
        return this;
    }

    /** This rank's operand. */
    public ReduceArgs own(MemorySegment segment, long offset) {
        this.own = Objects.requireNonNull(segment, "own");
        this.ownOffset = offset;
        return this;
    }

    /** Where rank {@code j}'s operand starts in {@link #shm}; ignored for {@code self}. */
    public ReduceArgs term(int j, long offset) {
        terms[j] = offset;
        return this;
    }

    /** Where the result goes (the caller's memory, usually). */
    public ReduceArgs out(MemorySegment segment, long offset) {
        if (segment.isReadOnly()) {
            throw new IllegalArgumentException("the result cannot go to a read-only segment: " + segment);
        }
        this.out = segment;
        this.outOffset = offset;
        return this;
    }

    /** No copy of the result into the mapping. */
    public ReduceArgs noResults() {
        resultCount = 0;
        return this;
    }

    /** One more copy of the result, at {@code offset} of {@link #shm}: where the other ranks copy it from. */
    public ReduceArgs addResult(long offset) {
        results[resultCount++] = offset;
        return this;
    }

    /** Staging arrays per element type: two to fold, and a third for 16-bit floats' bits. */
    private static final int STAGING_PER_TYPE = 3;

    /** Staging array {@code which} (0, 1 or 2) of this call's type, of {@code length} elements, made by {@code arrays} at first. */
    @SuppressWarnings("unchecked")
    <A> A staging(int which, IntFunction<A> arrays, int length) {
        int k = STAGING_PER_TYPE * type.ordinal() + which;
        if (staging[k] == null) {
            staging[k] = arrays.apply(length);
        }
        return (A) staging[k];
    }
}
