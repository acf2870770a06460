package dev.cohort.shm.kernels;

import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.ReduceOp;
import java.lang.foreign.MemorySegment;

/**
 * The operands of one {@link ReduceKernels#reduce} call: a mutable flyweight that its caller
 * owns and refills for every call, so that calling a kernel allocates nothing (a group keeps one
 * under its runner lock). Not thread-safe.
 *
 * <p>The words (see {@link ReduceKernels}): {@code count} elements are reduced over {@code ranks}
 * operands; operand j starts at byte {@code term(j)} of the mapping {@code shm}, except this
 * rank's own ({@code self}), which is read from {@code own} at {@code ownOffset}. The result goes
 * to {@code out} at {@code outOffset} and to each of the {@code results} offsets of {@code shm}
 * (none after {@link #noResults()}).
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

    /** For groups of at most {@code maxRanks} ranks; at most {@code maxRanks} result copies. */
    public ReduceArgs(int maxRanks) {
        this.terms = new long[Math.max(2, maxRanks)];
        this.results = new long[Math.max(2, maxRanks)];
    }

    /** The element type and the operation. */
    public ReduceArgs op(DataType type, ReduceOp op) {
        this.type = type;
        this.op = op;
        return this;
    }

    /** {@code ranks} operands, of which {@code self} is this rank's (read from {@link #own}). */
    public ReduceArgs ranks(int ranks, int self) {
        if (ranks > terms.length) {
            throw new IllegalArgumentException(ranks + " ranks, made for at most " + terms.length);
        }
        this.ranks = ranks;
        this.self = self;
        return this;
    }

    /** This rank's operand. */
    public ReduceArgs own(MemorySegment segment, long offset) {
        this.own = segment;
        this.ownOffset = offset;
        return this;
    }

    /** The mapping the other operands (see {@link #term}) and the result copies lie in. */
    public ReduceArgs shm(MemorySegment shm) {
        this.shm = shm;
        return this;
    }

    /** Where rank {@code j}'s operand starts in {@link #shm}; ignored for {@code self}. */
    public ReduceArgs term(int j, long offset) {
        terms[j] = offset;
        return this;
    }

    public ReduceArgs count(long count) {
        this.count = count;
        return this;
    }

    /** Where the result goes (the caller's memory, usually). */
    public ReduceArgs out(MemorySegment segment, long offset) {
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
}
