package dev.cohort.shm.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.HalfFloats;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.testkit.JvmWorkers;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import java.util.function.BinaryOperator;
import java.util.function.LongFunction;
import java.util.function.ToLongFunction;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The two-rank float32 SUM kernels (copying, with and without the result copy, and in place),
 * element by element, for every count from 0 to 300 and a few larger ones, so that every split
 * between whole vectors and the scalar tail is checked. Segments of the kinds the engine passes
 * (a direct buffer, a mapping of a /dev/shm file), at offsets that are not multiples of a vector.
 * Then the general kernels: every type and op over three ranks, against a plain loop in the
 * element's own type (16-bit floats: in float32, rounded once), bit for bit, for every count from
 * 0 to 300 and for counts around the general path's chunk size.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ReduceKernelsTest {

    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private final ReduceArgs args = new ReduceArgs(4); // reused across calls, as a group does
    private static final int MAX = 5000;
    private static Arena arena;
    private static MemorySegment shm;
    private static Path file;

    @BeforeAll
    static void map() throws Exception {
        file = Files.createTempFile(Path.of("/dev/shm"), "cohort-kernels-test", "");
        arena = Arena.ofShared();
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            shm = ch.map(
                    FileChannel.MapMode.READ_WRITE,
                    0,
                    5 * (8L * MAX + 64) + 4096,
                    arena); // checkGeneralKernels' largest
        }
    }

    @AfterAll
    static void unmap() throws Exception {
        arena.close();
        Files.deleteIfExists(file);
    }

    private static float own(int i) {
        return (i % 97) * 0.25f - 3;
    }

    private static float peer(int i) {
        return (i % 89) * 0.5f + 1;
    }

    @Test
    void copyingKernelsMatchElementByElement() {
        MemorySegment user = MemorySegment.ofBuffer(ByteBuffer.allocateDirect(4 * MAX + 64));
        long ownOff = 4; // not vector-aligned
        long peerOff = 12;
        long resultOff = 4L * MAX + 2048 + 20;
        for (int count : counts()) {
            for (boolean twice : new boolean[] {false, true}) {
                for (int i = 0; i < count; i++) {
                    user.set(F, ownOff + 4L * i, own(i));
                    shm.set(F, peerOff + 4L * i, peer(i));
                }
                args.ranks(2, 0)
                        .op(DataType.FLOAT32, ReduceOp.SUM)
                        .own(user, ownOff)
                        .shm(shm)
                        .term(1, peerOff)
                        .count(count)
                        .out(user, ownOff)
                        .noResults();
                ReduceKernels.reduce(twice ? args.addResult(resultOff) : args);
                for (int i = 0; i < count; i++) {
                    float expected = own(i) + peer(i);
                    assertThat(user.get(F, ownOff + 4L * i))
                            .as("count %d element %d", count, i)
                            .isEqualTo(expected);
                    if (twice) {
                        assertThat(shm.get(F, resultOff + 4L * i))
                                .as("result copy, count %d element %d", count, i)
                                .isEqualTo(expected);
                    }
                }
            }
        }
    }

    @Test
    void inPlaceKernelMatchesElementByElement() {
        long ownOff = 8;
        long peerOff = 4L * MAX + 28;
        for (int count : counts()) {
            for (int i = 0; i < count; i++) {
                shm.set(F, ownOff + 4L * i, own(i));
                shm.set(F, peerOff + 4L * i, peer(i));
            }
            ReduceKernels.reduce(args.ranks(2, 1)
                    .op(DataType.FLOAT32, ReduceOp.SUM)
                    .own(shm, ownOff)
                    .shm(shm)
                    .term(0, peerOff)
                    .count(count)
                    .out(shm, ownOff)
                    .noResults()
                    .addResult(peerOff));
            for (int i = 0; i < count; i++) {
                float expected = own(i) + peer(i);
                assertThat(shm.get(F, ownOff + 4L * i))
                        .as("own, count %d element %d", count, i)
                        .isEqualTo(expected);
                assertThat(shm.get(F, peerOff + 4L * i))
                        .as("peer's, count %d element %d", count, i)
                        .isEqualTo(expected);
            }
        }
    }

    /** This test JVM runs C2 (the build's argLine); a JVM told to stop at C1, or to interpret, does not. */
    @Test
    void theVectorKernelsAreTakenOnlyWhereC2CompilesThem() throws Exception {
        assertThat(ReduceKernels.compilesWithC2()).isTrue();
        for (String flag : new String[] {"-XX:TieredStopAtLevel=1", "-Xint"}) {
            Process p = new ProcessBuilder(JvmWorkers.javaCommand(PrintsWhetherC2.class, List.of(flag), List.of()))
                    .redirectErrorStream(true)
                    .start();
            String out = new String(p.getInputStream().readAllBytes());
            assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
            assertThat(out).as(flag).contains("C2 false");
        }
    }

    /** Prints {@code C2 true|false} for the JVM it runs in. */
    static final class PrintsWhetherC2 {
        public static void main(String[] args) {
            System.out.println("C2 " + ReduceKernels.compilesWithC2());
        }
    }

    @Test
    void generalKernelsMatchAPlainLoopInTheElementTypeForEveryTypeAndOp() {
        for (DataType type : DataType.values()) {
            checkGeneralKernels(type, IntStream.rangeClosed(0, 300).toArray());
        }
    }

    /** Counts that end just before, at and just after the general path's chunks, and one of several chunks. */
    @Test
    void generalKernelsMatchAPlainLoopAcrossChunks() {
        for (DataType type : DataType.values()) {
            int chunk = ReduceKernels.CHUNK_BYTES / type.byteSize();
            checkGeneralKernels(type, new int[] {chunk - 1, chunk, chunk + 1, 2 * chunk + 7, MAX});
        }
    }

    /**
     * Every op over three ranks, rank 1's operand in a direct buffer, the others and two result
     * copies in the mapping, at offsets that are not multiples of a vector nor, for 8-byte types, of 8.
     */
    private void checkGeneralKernels(DataType type, int[] counts) {
        int n = 3;
        int self = 1;
        int e = type.byteSize();
        long span = (long) e * Arrays.stream(counts).max().orElseThrow() + 64;
        MemorySegment user = MemorySegment.ofBuffer(ByteBuffer.allocateDirect(Math.toIntExact(2 * span)));
        long ownOff = 8;
        long outOff = span + 24;
        long[] terms = {4, span + 12, 2 * span + 16};
        long[] results = {3 * span + 20, 4 * span + 36};
        for (ReduceOp op : ReduceOp.values()) {
            for (int count : counts) {
                for (int i = 0; i < count; i++) {
                    for (int j = 0; j < n; j++) {
                        put(type, j == self ? user : shm, (j == self ? ownOff : terms[j]) + (long) e * i, value(j, i));
                    }
                }
                args.ranks(n, self)
                        .op(type, op)
                        .own(user, ownOff)
                        .shm(shm)
                        .count(count)
                        .out(user, outOff)
                        .noResults()
                        .addResult(results[0])
                        .addResult(results[1]);
                for (int j = 0; j < n; j++) {
                    args.term(j, terms[j]);
                }
                ReduceKernels.reduce(args);
                for (int i = 0; i < count; i++) {
                    long expected = expected(type, op, n, i);
                    long at = (long) e * i;
                    if (bits(type, user, outOff + at) != expected
                            || bits(type, shm, results[0] + at) != expected
                            || bits(type, shm, results[1] + at) != expected) {
                        String what = type + " " + op + " count " + count + " element " + i;
                        assertThat(bits(type, user, outOff + at)).as(what).isEqualTo(expected);
                        assertThat(bits(type, shm, results[0] + at))
                                .as("first copy, " + what)
                                .isEqualTo(expected);
                        assertThat(bits(type, shm, results[1] + at))
                                .as("second copy, " + what)
                                .isEqualTo(expected);
                    }
                }
            }
        }
    }

    /** Rank j's element i: small, negative ones too, and every 7th large enough for int32 sums and products to wrap. */
    private static long value(int j, int i) {
        long v = (i * 2654435761L + j * 97L) % 201 - 100;
        return i % 7 == 0 ? v * 50_000_003L : v;
    }

    private static void put(DataType type, MemorySegment m, long at, long v) {
        switch (type) {
            case FLOAT32 -> m.set(F, at, v * 0.37f);
            case FLOAT64 -> m.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, at, v * 0.37);
            case INT32 -> m.set(ValueLayout.JAVA_INT_UNALIGNED, at, (int) v);
            case INT64 -> m.set(ValueLayout.JAVA_LONG_UNALIGNED, at, v);
            case FLOAT16, BFLOAT16 ->
                m.set(ValueLayout.JAVA_SHORT_UNALIGNED, at, HalfFloats.fromFloat(type, v * 0.37f));
        }
    }

    private static long bits(DataType type, MemorySegment m, long at) {
        return switch (type) {
            case FLOAT32 -> Float.floatToRawIntBits(m.get(F, at));
            case FLOAT64 -> Double.doubleToRawLongBits(m.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, at));
            case INT32 -> m.get(ValueLayout.JAVA_INT_UNALIGNED, at);
            case INT64 -> m.get(ValueLayout.JAVA_LONG_UNALIGNED, at);
            case FLOAT16, BFLOAT16 -> m.get(ValueLayout.JAVA_SHORT_UNALIGNED, at) & 0xFFFF;
        };
    }

    /** The reduction of element i over ranks 0..n-1 in rank order, in the element's own type. */
    private static long expected(DataType type, ReduceOp op, int n, int i) {
        return switch (type) {
            case FLOAT32 -> FLOATS.reduce(op, n, i);
            case FLOAT64 -> DOUBLES.reduce(op, n, i);
            case INT32 -> INTS.reduce(op, n, i);
            case INT64 -> LONGS.reduce(op, n, i);
            case FLOAT16 -> FP16.reduce(op, n, i);
            case BFLOAT16 -> BF16.reduce(op, n, i);
        };
    }

    /** 16-bit floats: the stored (rounded) values, computed in float32, rounded to 16 bits once at the end. */
    private static Reference<Float> halves(DataType type) {
        return inFloat32(
                v -> HalfFloats.toFloat(type, HalfFloats.fromFloat(type, v * 0.37f)),
                x -> HalfFloats.fromFloat(type, x) & 0xFFFF);
    }

    /** Values made by {@code of}, reduced in float32 arithmetic, stored as {@code bits} gives. */
    private static Reference<Float> inFloat32(LongFunction<Float> of, ToLongFunction<Float> bits) {
        return new Reference<>(of, Float::sum, (x, y) -> x * y, Math::min, Math::max, (x, n) -> x / n, bits);
    }

    private static final Reference<Float> FP16 = halves(DataType.FLOAT16);
    private static final Reference<Float> BF16 = halves(DataType.BFLOAT16);

    private static final Reference<Float> FLOATS = inFloat32(v -> v * 0.37f, Float::floatToRawIntBits);
    private static final Reference<Double> DOUBLES = new Reference<>(
            v -> v * 0.37,
            Double::sum,
            (x, y) -> x * y,
            Math::min,
            Math::max,
            (x, n) -> x / n,
            Double::doubleToRawLongBits);
    private static final Reference<Integer> INTS =
            new Reference<>(v -> (int) v, Integer::sum, (x, y) -> x * y, Math::min, Math::max, (x, n) -> x / n, x -> x);
    private static final Reference<Long> LONGS =
            new Reference<>(v -> v, Long::sum, (x, y) -> x * y, Math::min, Math::max, (x, n) -> x / n, x -> x);

    /**
     * One element type's arithmetic, written plainly in that type (boxed, as speed does not matter
     * here): {@code of} turns a {@link #value} into the element {@link #put} stores, {@code bits}
     * the element into what {@link #bits} reads back.
     */
    private record Reference<T>(
            LongFunction<T> of,
            BinaryOperator<T> sum,
            BinaryOperator<T> product,
            BinaryOperator<T> min,
            BinaryOperator<T> max,
            BiFunction<T, Integer, T> divide,
            ToLongFunction<T> bits) {
        long reduce(ReduceOp op, int n, int i) {
            T acc = of.apply(value(0, i));
            for (int j = 1; j < n; j++) {
                T t = of.apply(value(j, i));
                acc = switch (op) {
                    case SUM, AVG -> sum.apply(acc, t);
                    case PRODUCT -> product.apply(acc, t);
                    case MIN -> min.apply(acc, t);
                    case MAX -> max.apply(acc, t);
                };
            }
            return bits.applyAsLong(op == ReduceOp.AVG ? divide.apply(acc, n) : acc);
        }
    }

    private static int[] counts() {
        int[] c = new int[301 + 4];
        for (int i = 0; i <= 300; i++) {
            c[i] = i;
        }
        c[301] = 1009;
        c[302] = 1024;
        c[303] = 4099;
        c[304] = MAX;
        return c;
    }
}
