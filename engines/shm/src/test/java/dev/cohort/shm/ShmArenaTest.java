package dev.cohort.shm;

import static dev.cohort.shm.ShmThreadsTest.backend;
import static dev.cohort.shm.ShmThreadsTest.onRanks;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.cohort.api.collective.BufferAllocator;
import dev.cohort.api.collective.CollectiveMismatchException;
import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.api.collective.Work;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The arena allocator and the in-place allreduce (one thread per rank, each attached as a process
 * would be): same bits as the copying path, no byte copied, clear errors when ranks disagree.
 */
class ShmArenaTest {

    private static final int[] SIZES = {0, 1, 17, 4099, 100_003};

    /** Rank- and index-dependent values that are exact in every type. */
    private static void fill(DenseBuffer b, int rank, int salt) {
        for (int i = 0; i < b.count(); i++) {
            int v = (i * 31 + rank * 7 + salt) % 23 - 11;
            b.setDouble(i, b.dataType() == DataType.FLOAT32 || b.dataType() == DataType.FLOAT64 ? v * 0.37 + rank : v);
        }
    }

    @ParameterizedTest(name = "world {0}")
    @ValueSource(ints = {1, 2, 3, 4})
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void allreduceOfArenaBuffersCopiesNothingAndGivesTheCopyingPathsBits(int world) throws Exception {
        List<Integer> compared = onArenaRanks("arena", world, (r, group, arena) -> {
            int checks = 0;
            for (DataType type : DataType.values()) {
                for (ReduceOp op : ReduceOp.values()) {
                    for (int size : SIZES) {
                        DenseBuffer shared = arena.allocate(type, size).orElseThrow();
                        DenseBuffer direct = DenseBuffer.allocateDirect(type, size);
                        fill(shared, r, checks);
                        fill(direct, r, checks);
                        group.allreduce(direct, op).await();
                        check(
                                group,
                                () -> group.allreduce(shared, op).await(),
                                0,
                                shared,
                                direct,
                                "allreduce " + type + " " + op + " " + size);
                        arena.release(shared);
                        checks++;
                    }
                }
            }
            return checks;
        });
        assertThat(compared).allMatch(c -> c == DataType.values().length * ReduceOp.values().length * SIZES.length);
    }

    @ParameterizedTest(name = "world {0}")
    @ValueSource(ints = {1, 2, 3})
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void broadcastOfArenaBuffersCopiesOnceIntoEachOtherRankAndGivesTheRootsBits(int world) throws Exception {
        List<Integer> compared = onArenaRanks("arenabc", world, (r, group, arena) -> {
            int checks = 0;
            for (DataType type : DataType.values()) {
                for (int size : SIZES) {
                    for (int root = 0; root < world; root++) {
                        DenseBuffer shared = arena.allocate(type, size).orElseThrow();
                        DenseBuffer rootsBits = DenseBuffer.allocateDirect(type, size);
                        fill(shared, r, checks);
                        fill(rootsBits, root, checks);
                        int from = root;
                        check(
                                group,
                                () -> group.broadcast(shared, from).await(),
                                r == root ? 0 : shared.byteSize(),
                                shared,
                                rootsBits,
                                "rank " + r + ": broadcast " + type + " " + size + " from " + root);
                        arena.release(shared);
                        checks++;
                    }
                }
            }
            return checks;
        });
        assertThat(compared).allMatch(c -> c == DataType.values().length * SIZES.length * world);
    }

    /** What one rank checks on its group's arena; returns how many checks it made. */
    @FunctionalInterface
    private interface ArenaChecks {
        int run(int rank, ShmProcessGroup group, BufferAllocator arena);
    }

    /**
     * Runs {@code checks} on {@code world} ranks of a group with 4 KiB segments (the copying path
     * takes many pipeline segments; the in-place one needs none) and an 8 MiB arena; returns each
     * rank's count, once the run left nothing in /dev/shm.
     */
    private static List<Integer> onArenaRanks(String what, int world, ArenaChecks checks) throws Exception {
        String run = what + world + "-" + ProcessHandle.current().pid();
        List<Integer> counts = onRanks(world, r -> {
            try (ShmBackend b =
                    backend(run, r, world, new ShmOptions().segmentKib(4).arenaMib(8))) {
                b.initialize();
                ShmProcessGroup group = (ShmProcessGroup) b.group();
                return checks.run(r, group, group.allocator().orElseThrow());
            }
        });
        assertThat(ShmProcessesTest.leftovers(run)).isEmpty();
        return counts;
    }

    /** Runs {@code call}, then checks that it copied {@code copies} bytes and left {@code expected}'s bits in {@code result}. */
    private static void check(
            ShmProcessGroup group, Runnable call, long copies, DenseBuffer result, DenseBuffer expected, String what) {
        long before = group.bytesCopied();
        call.run();
        if (group.bytesCopied() - before != copies) {
            throw new AssertionError(what + ": copied " + (group.bytesCopied() - before) + " bytes, not " + copies);
        }
        if (MemorySegment.ofBuffer(result.view()).mismatch(MemorySegment.ofBuffer(expected.view())) != -1) {
            throw new AssertionError(what + ": different bits");
        }
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void theInPlaceSumIsTheSumOfEveryRanksBuffer() throws Exception {
        String run = "arenasum-" + ProcessHandle.current().pid();
        List<float[]> results = onRanks(3, r -> {
            try (ShmBackend b = backend(run, r, 3, new ShmOptions().arenaMib(1))) {
                b.initialize();
                DenseBuffer data = b.group()
                        .allocator()
                        .orElseThrow()
                        .allocate(DataType.FLOAT32, 1000)
                        .orElseThrow();
                for (int i = 0; i < 1000; i++) {
                    data.setDouble(i, i + 1000 * r);
                }
                b.group().allreduce(data, ReduceOp.SUM).await();
                float[] out = new float[1000];
                for (int i = 0; i < 1000; i++) {
                    out[i] = (float) data.getDouble(i);
                }
                return out;
            }
        });
        for (float[] out : results) {
            for (int i = 0; i < 1000; i++) {
                assertThat(out[i]).isEqualTo(3 * i + 3000f);
            }
        }
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void ranksThatDisagreeAboutTheArenaAreToldSo() throws Exception {
        List<String> errors = withBufferInTheArenaOnRank0Only("arenamix", (g, data) -> g.allreduce(data, ReduceOp.SUM));
        assertThat(errors.get(0))
                .contains("shm world rank 0 of 2: allreduce #0 (float32[64] SUM): rank 1's buffer is not "
                        + "in its shm arena and this rank's is; allocate the buffers of a collective from group.allocator() on "
                        + "every rank or on none");
        assertThat(errors.get(1)).contains("rank 0's buffer is in its shm arena and this rank's is not");
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aBroadcastFromTheArenaToABufferOutsideItIsRefused() throws Exception {
        List<String> errors = withBufferInTheArenaOnRank0Only("arenamixbc", (g, data) -> g.broadcast(data, 0));
        assertThat(errors.get(0)).contains("broadcast #0").contains("rank 1's buffer is not in its shm arena");
        assertThat(errors.get(1))
                .contains("broadcast #0")
                .contains("rank 0's buffer is in its shm arena and this rank's is not");
    }

    /**
     * Two ranks run {@code call} on 64 floats, rank 0's from its arena, rank 1's outside it; each
     * returns its mismatch message (or "no error").
     */
    private static List<String> withBufferInTheArenaOnRank0Only(
            String name, BiFunction<ProcessGroup, DenseBuffer, Work> call) throws Exception {
        String run = name + "-" + ProcessHandle.current().pid();
        return onRanks(2, r -> {
            try (ShmBackend b = backend(run, r, 2, new ShmOptions().arenaMib(1).timeout(Duration.ofSeconds(10)))) {
                b.initialize();
                DenseBuffer data = r == 0
                        ? b.group()
                                .allocator()
                                .orElseThrow()
                                .allocate(DataType.FLOAT32, 64)
                                .orElseThrow()
                        : DenseBuffer.allocateDirect(DataType.FLOAT32, 64);
                try {
                    call.apply(b.group(), data).await();
                    return "no error";
                } catch (CollectiveMismatchException e) {
                    return e.getMessage();
                }
            }
        });
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void theArenaRunsOutReusesWhatIsReleasedAndItsBuffersOutliveTheGroup() throws Exception {
        String run = "arenafull-" + ProcessHandle.current().pid();
        DenseBuffer kept = onRanks(1, r -> {
                    try (ShmBackend b = backend(run, 0, 1, new ShmOptions().arenaMib(1))) {
                        b.initialize();
                        ProcessGroup group = b.group();
                        assertThat(group.withTimeout(Duration.ofSeconds(5)).allocator())
                                .containsSame(group.allocator().get());
                        BufferAllocator arena = group.allocator().orElseThrow();
                        List<DenseBuffer> quarters = new ArrayList<>();
                        for (int i = 0; i < 4; i++) {
                            quarters.add(
                                    arena.allocate(DataType.INT64, 32 * 1024).orElseThrow()); // 256 KiB each
                        }
                        assertThat(arena.allocate(DataType.INT32, 1)).isEmpty();
                        assertThat(arena.describe())
                                .contains("1 MiB, --shm-arena-mib", "0 MiB unallocated", "found no room");
                        quarters.get(1).setLong(499, -1);
                        arena.release(quarters.get(1));
                        assertThatThrownBy(() -> arena.release(quarters.get(1)))
                                .hasMessageContaining("was not allocated");
                        Optional<DenseBuffer> again = arena.allocate(DataType.FLOAT32, 1000);
                        assertThat(again).isPresent();
                        assertThat(again.get().getDouble(999)).isZero();
                        quarters.get(3).setLong(7, 42);
                        return quarters.get(3);
                    }
                })
                .get(0);
        System.gc();
        assertThat(kept.getLong(7)).as("still mapped after the group closed").isEqualTo(42);
        kept.setLong(8, 43);
        assertThat(ShmProcessesTest.leftovers(run)).isEmpty();
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void noArenaMeansNoAllocator() throws Exception {
        String run = "noarena-" + ProcessHandle.current().pid();
        List<Boolean> present = onRanks(1, r -> {
            try (ShmBackend b = backend(run, 0, 1, new ShmOptions().arenaMib(0))) {
                b.initialize();
                return b.group().allocator().isPresent();
            }
        });
        assertThat(present).containsExactly(false);
        assertThatThrownBy(() -> new ShmOptions().arenaMib(-1))
                .hasMessageContaining("--shm-arena-mib must be in [0, 65536]");
    }
}
