package dev.cohort.shm;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.ReduceOp;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The two-rank float32 SUM kernels (copying, with and without the result copy, and in place),
 * element by element, for every count from 0 to 300 and a few larger ones, so that every split
 * between whole vectors and the scalar tail is checked. Segments of the kinds the engine passes
 * (a direct buffer, a mapping of a /dev/shm file), at offsets that are not multiples of a vector.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ReduceKernelsTest {

    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final int MAX = 5000;
    private static Arena arena;
    private static MemorySegment shm;
    private static Path file;

    @BeforeAll
    static void map() throws Exception {
        file = Files.createTempFile(Path.of("/dev/shm"), "cohort-kernels-test", "");
        arena = Arena.ofShared();
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            shm = ch.map(FileChannel.MapMode.READ_WRITE, 0, 4L * 4 * MAX + 4096, arena);
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
        long ownOff = 4;        // not vector-aligned
        long peerOff = 12;
        long resultOff = 4L * MAX + 2048 + 20;
        for (int count : counts()) {
            for (boolean twice : new boolean[] {false, true}) {
                for (int i = 0; i < count; i++) {
                    user.set(F, ownOff + 4L * i, own(i));
                    shm.set(F, peerOff + 4L * i, peer(i));
                }
                ReduceKernels.reduce(DataType.FLOAT32, ReduceOp.SUM, 2, 0, user, ownOff, shm, new long[] {-1, peerOff},
                        count, user, ownOff, twice ? resultOff : -1, null);
                for (int i = 0; i < count; i++) {
                    float expected = own(i) + peer(i);
                    assertThat(user.get(F, ownOff + 4L * i)).as("count %d element %d", count, i).isEqualTo(expected);
                    if (twice) {
                        assertThat(shm.get(F, resultOff + 4L * i)).as("result copy, count %d element %d", count, i)
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
            ReduceKernels.reduce(DataType.FLOAT32, ReduceOp.SUM, 2, 1, shm, ownOff, shm, new long[] {peerOff, -1}, count,
                    shm, ownOff, peerOff, null);
            for (int i = 0; i < count; i++) {
                float expected = own(i) + peer(i);
                assertThat(shm.get(F, ownOff + 4L * i)).as("own, count %d element %d", count, i).isEqualTo(expected);
                assertThat(shm.get(F, peerOff + 4L * i)).as("peer's, count %d element %d", count, i).isEqualTo(expected);
            }
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
