package dev.cohort.shm.kernels;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@link ReduceKernels}' Vector API kernels, loaded only in a JVM that has the incubating module
 * ({@code --add-modules jdk.incubator.vector}); {@link ReduceKernels#VECTOR_API} says whether this
 * one has.
 */
final class VectorKernels {

    private static final ByteOrder NO = ByteOrder.nativeOrder();
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final VectorSpecies<Float> FLOATS = FloatVector.SPECIES_PREFERRED;

    private VectorKernels() {}

    /*
     * The common case, float32 SUM (or AVG) over two ranks: own + peer (times one half). IEEE addition is commutative, so
     * both ranks get the same bits whichever operand is their own. Each variant is its own small
     * method with one loop and no branch inside: C2 compiles only the branches a method has taken,
     * and a branch taken later (the result copy that the pipelined path needs and the small path
     * does not, say) deoptimizes the method back to the interpreter, where Vector API operations
     * run about 100x slower until C2 compiles it again.
     */

    /**
     * An allreduce in place: the operands and the results all lie in one segment (the arenas). Its
     * own copy of the loop, so that the copying paths' segments (a direct buffer's and the
     * mapping's) never meet these in one compiled loop (see {@link ReduceKernels#compileFloatKernels}).
     */
    static void sumTwoFloatsInPlace(
            MemorySegment m, long own, long peer, long count, long out, long result, float scale) {
        long upper = FLOATS.loopBound(count);
        for (long b = 0, end = upper * 4; b < end; b += FLOATS.vectorByteSize()) {
            FloatVector sum = FloatVector.fromMemorySegment(FLOATS, m, own + b, NO)
                    .add(FloatVector.fromMemorySegment(FLOATS, m, peer + b, NO))
                    .mul(scale);
            sum.intoMemorySegment(m, out + b, NO);
            sum.intoMemorySegment(m, result + b, NO);
        }
        if (upper < count) {
            sumTwoFloatsTail(m, own, m, peer, upper, count, m, out, result, scale);
        }
    }

    /**
     * Copying paths: {@code own} and {@code out} are the caller's direct buffer, {@code shm} the
     * mapping. {@code scale} is 1 (SUM) or 0.5 (AVG): multiplying by either is exact.
     */
    static void sumTwoFloats(
            MemorySegment own,
            long ownOff,
            MemorySegment shm,
            long peer,
            long count,
            MemorySegment out,
            long outOff,
            long resultOff,
            float scale) {
        long vectors = FLOATS.loopBound(count);
        if (resultOff >= 0) {
            sumTwoFloatsTwice(own, ownOff, shm, peer, vectors, out, outOff, resultOff, scale);
        } else {
            sumTwoFloatsOnce(own, ownOff, shm, peer, vectors, out, outOff, scale);
        }
        if (vectors < count) {
            sumTwoFloatsTail(own, ownOff, shm, peer, vectors, count, out, outOff, resultOff, scale);
        }
    }

    private static void sumTwoFloatsOnce(
            MemorySegment own,
            long ownOff,
            MemorySegment shm,
            long peer,
            long upper,
            MemorySegment out,
            long outOff,
            float scale) {
        for (long b = 0, end = upper * 4; b < end; b += FLOATS.vectorByteSize()) {
            FloatVector.fromMemorySegment(FLOATS, own, ownOff + b, NO)
                    .add(FloatVector.fromMemorySegment(FLOATS, shm, peer + b, NO))
                    .mul(scale)
                    .intoMemorySegment(out, outOff + b, NO);
        }
    }

    private static void sumTwoFloatsTwice(
            MemorySegment own,
            long ownOff,
            MemorySegment shm,
            long peer,
            long upper,
            MemorySegment out,
            long outOff,
            long resultOff,
            float scale) {
        for (long b = 0, end = upper * 4; b < end; b += FLOATS.vectorByteSize()) {
            FloatVector sum = FloatVector.fromMemorySegment(FLOATS, own, ownOff + b, NO)
                    .add(FloatVector.fromMemorySegment(FLOATS, shm, peer + b, NO))
                    .mul(scale);
            sum.intoMemorySegment(out, outOff + b, NO);
            sum.intoMemorySegment(shm, resultOff + b, NO);
        }
    }

    private static void sumTwoFloatsTail(
            MemorySegment own,
            long ownOff,
            MemorySegment shm,
            long peer,
            long from,
            long count,
            MemorySegment out,
            long outOff,
            long resultOff,
            float scale) {
        for (long i = from; i < count; i++) {
            long b = i * 4L;
            float sum = (own.get(F32, ownOff + b) + shm.get(F32, peer + b)) * scale;
            out.set(F32, outOff + b, sum);
            if (resultOff >= 0) {
                shm.set(F32, resultOff + b, sum);
            }
        }
    }
}
