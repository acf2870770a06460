package dev.cohort.runtime.flight;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.CollectiveException;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.OpKind;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.api.collective.Work;
import dev.cohort.runtime.AbstractProcessGroup;
import dev.cohort.runtime.CallQueue;
import dev.cohort.runtime.flight.FlightRecords.Call;
import dev.cohort.runtime.flight.FlightRecords.Ring;
import dev.cohort.runtime.flight.FlightRecords.State;
import dev.cohort.runtime.threads.ThreadsWorld;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The flight record: calls of a real group go on record as issued, done or failed; the ring keeps
 * the last N; rings in files are read by another reader as written; and the report tells which
 * rank stopped where.
 */
@Timeout(60)
class FlightRecorderTest {

    private static Collective allreduce(long sequence, int floats) {
        return new Collective(
                OpKind.ALLREDUCE, sequence, DenseBuffer.of(new float[floats]), null, ReduceOp.SUM, -1, null);
    }

    /** The rings of two thread ranks of the threads engine, each recording its world group's calls as {@code calls} make them. */
    private static List<Ring> recordedOnTwoRanks(java.util.function.ObjIntConsumer<AbstractProcessGroup> calls) {
        ThreadsWorld world = new ThreadsWorld(2, 2, Duration.ofSeconds(2));
        return ThreadsWorld.run(2, rank -> {
            try (AbstractProcessGroup g = (AbstractProcessGroup) world.group(rank)) {
                FlightRecorder recorder = FlightRecorder.inMemory(rank, 2, 16, "threads");
                g.recordsFlight(recorder);
                calls.accept(g, rank);
                return recorder.read();
            }
        });
    }

    @Test
    void aGroupsCallsGoOnRecordAsDoneOrFailed() {
        List<Ring> rings = recordedOnTwoRanks((g, rank) -> {
            g.allreduce(DenseBuffer.of(new float[1024]), ReduceOp.SUM).await();
            g.broadcast(DenseBuffer.of(new int[3]), 1).await();
            g.barrier().await();
            if (rank == 0) {
                // Rank 1 never comes: rank 0 times out.
                assertThatThrownBy(() -> g.allreduce(DenseBuffer.of(new double[2]), ReduceOp.MAX)
                                .await())
                        .isInstanceOf(CollectiveException.class);
            }
        });
        Ring zero = rings.get(0);
        assertThat(zero.calls())
                .extracting(Call::describe)
                .containsExactly(
                        "allreduce #0 (4 KiB float32)",
                        "broadcast #1 (12 B int32, root 1)",
                        "barrier #2",
                        "allreduce #3 (16 B float64)");
        assertThat(zero.calls())
                .extracting(Call::state)
                .containsExactly(State.DONE, State.DONE, State.DONE, State.FAILED);
        assertThat(zero.calls().get(0).settled()).isPresent();
        assertThat(rings.get(1).calls()).hasSize(3).allMatch(c -> c.state() == State.DONE);
        assertThat(zero.pid()).isEqualTo(ProcessHandle.current().pid());
    }

    @Test
    void subgroupsCallsGoOnRecordUnderTheirNames() {
        List<Ring> rings = recordedOnTwoRanks((g, rank) -> {
            try (var pair = g.split(0, 1 - rank).orElseThrow()) {
                pair.allreduce(DenseBuffer.of(new float[4]), ReduceOp.SUM).await();
                try (var inner = pair.split(0, 0).orElseThrow()) {
                    inner.barrier().await();
                }
            }
            g.barrier().await();
        });
        for (Ring ring : rings) {
            assertThat(ring.engine()).isEqualTo("threads");
            assertThat(ring.calls().stream().map(Call::describe))
                    .containsExactly(
                            "allgather #0 (12 B int32)",
                            "allreduce #0 of world/split-0-color-0 (16 B float32)",
                            "allgather #1 of world/split-0-color-0 (12 B int32)",
                            "barrier #0 of world/split-0-color-0/split-0-color-0",
                            "barrier #1");
            // The world's collectives are the ones compared across ranks.
            assertThat(ring.collectives()).extracting(Call::sequence).containsExactly(0L, 1L);
        }
    }

    @Test
    void theReportTellsWhereARankWaitsInASubgroup(@TempDir Path dir) throws Exception {
        FlightRecorder[] ranks = new FlightRecorder[3];
        for (int r = 0; r < 3; r++) {
            ranks[r] = FlightRecorder.inFile(dir.resolve(FlightRecorder.fileName(r)), r, 3, 16, "tcp");
            ranks[r].settled(ranks[r].issued(allreduce(0, 4)), false);
        }
        // Ranks 0 and 1 made a subgroup; rank 1 never came to its allreduce.
        int pair = ranks[0].group("world/new-group-0-color-0");
        assertThat(ranks[1].group("world/new-group-0-color-0")).isEqualTo(pair);
        ranks[0].issued(allreduce(0, 1024), pair);
        ranks[2].issued(allreduce(1, 4));
        assertThat(FlightReport.of(dir).summary())
                .matches("rank 1 completed allreduce #0 \\(16 B float32\\) and issued nothing since \\(\\d+ ms\\); "
                        + "rank 0 completed allreduce #0 \\(16 B float32\\), and waits in allreduce #0 of "
                        + "world/new-group-0-color-0 \\(4 KiB float32\\); "
                        + "rank 2 waits in allreduce #1 \\(16 B float32\\) for \\d+ ms");
    }

    @Test
    void aCallsTimeSplitsIntoQueuedAndOnTheWire() throws Exception {
        FlightRecorder recorder = FlightRecorder.inMemory(0, 1, 8, "tcp");
        CallQueue queue = new CallQueue("flight-test-engine", c -> "", e -> {});
        var release = new java.util.concurrent.CountDownLatch(1);
        try (var recording = new jdk.jfr.Recording()) {
            recording.enable(CollectiveEvent.NAME);
            recording.start();
            Collective first = allreduce(0, 1);
            Collective second = allreduce(1, 1);
            Work running = queue.submit("t", first, Duration.ofSeconds(10), c -> {
                try {
                    release.await(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            ((dev.cohort.runtime.FlightTracked) running).recordedAs(recorder, recorder.issued(first));
            Work queued = queue.submit("t", second, Duration.ofSeconds(10), c -> {});
            ((dev.cohort.runtime.FlightTracked) queued).recordedAs(recorder, recorder.issued(second));
            Thread.sleep(100);
            release.countDown();
            queued.await();
            recording.stop();
            Path file = Files.createTempFile("flight-test", ".jfr");
            try {
                recording.dump(file);
                List<RecordedEvent> events = RecordingFile.readAllEvents(file);
                RecordedEvent behind = events.stream()
                        .filter(e -> e.getLong("sequence") == 1 && "tcp".equals(e.getString("engine")))
                        .findFirst()
                        .orElseThrow();
                assertThat(behind.getString("engine")).isEqualTo("tcp");
                assertThat(behind.getString("group")).isEqualTo("world");
                assertThat(behind.getDuration("queued")).isGreaterThanOrEqualTo(Duration.ofMillis(90));
                assertThat(behind.getDuration("queued").plus(behind.getDuration("wire")))
                        .isBetween(
                                behind.getDuration().minusMillis(5),
                                behind.getDuration().plusMillis(5));
            } finally {
                Files.delete(file);
            }
        } finally {
            queue.close(() -> {});
        }
        List<Call> calls = recorder.read().calls();
        assertThat(calls.get(0).started()).isPresent();
        assertThat(calls.get(1).queued(Instant.now())).isGreaterThanOrEqualTo(Duration.ofMillis(90));
        assertThat(calls.get(0).queued(Instant.now())).isLessThan(calls.get(1).queued(Instant.now()));
    }

    @Test
    void theRingKeepsTheLastCallsOnly() {
        FlightRecorder recorder = FlightRecorder.inMemory(0, 1, 4, "threads");
        for (int i = 0; i < 10; i++) {
            recorder.settled(recorder.issued(allreduce(i, 1)), false);
        }
        long pending = recorder.issued(allreduce(10, 1));
        recorder.settled(pending - 4, true); // overwritten long ago: nothing happens
        Ring ring = recorder.read();
        assertThat(ring.written()).isEqualTo(11);
        assertThat(ring.calls()).extracting(Call::sequence).containsExactly(7L, 8L, 9L, 10L);
        assertThat(ring.calls())
                .extracting(Call::state)
                .containsExactly(State.DONE, State.DONE, State.DONE, State.PENDING);
    }

    @Test
    void theReportNamesTheRankThatStoppedAndWhereTheOthersWait(@TempDir Path dir) throws Exception {
        FlightRecorder[] ranks = new FlightRecorder[4];
        for (int r = 0; r < 4; r++) {
            ranks[r] = FlightRecorder.inFile(dir.resolve(FlightRecorder.fileName(r)), r, 4, 64, "tcp");
        }
        for (long seq = 0; seq <= 1042; seq++) {
            for (FlightRecorder r : ranks) {
                r.settled(r.issued(allreduce(seq, 4 << 20)), false);
            }
        }
        for (int r = 0; r < 3; r++) {
            ranks[r].issued(allreduce(1043, 4 << 20));
        }
        FlightReport report = FlightReport.of(dir);
        assertThat(report.rings()).extracting(Ring::rank).containsExactly(0, 1, 2, 3);
        assertThat(report.summary())
                .matches(
                        "rank 3 completed allreduce #1042 \\(16 MiB float32\\) and issued nothing since \\(\\d+ ms\\); "
                                + "ranks 0-2 wait in allreduce #1043 \\(16 MiB float32\\) for \\d+ ms");
        assertThat(report.details(2))
                .contains("rank 3 of 4 (pid " + ProcessHandle.current().pid() + ", 1043 calls recorded")
                .contains("done     allreduce #1042 (16 MiB float32), took")
                .contains("pending  allreduce #1043 (16 MiB float32), pending for");
    }

    @Test
    void theReportSaysWhenRanksIssuedDifferentCallsOrLeftNoRecord(@TempDir Path dir) throws Exception {
        FlightRecorder zero = FlightRecorder.inFile(dir.resolve(FlightRecorder.fileName(0)), 0, 3, 8, "tcp");
        FlightRecorder one = FlightRecorder.inFile(dir.resolve(FlightRecorder.fileName(1)), 1, 3, 8, "tcp");
        zero.issued(allreduce(0, 10));
        one.issued(new Collective(OpKind.BROADCAST, 0, DenseBuffer.of(new float[10]), null, null, 0, null));
        one.issued(new Collective(OpKind.RECV, 0, DenseBuffer.of(new int[1]), null, null, 0, new int[] {7}));
        String summary = FlightReport.of(dir).summary();
        assertThat(summary)
                .startsWith("rank 2 left no flight record here; ")
                .contains("rank 0 waits in allreduce #0 (40 B float32) for ")
                .contains("rank 1 waits in broadcast #0 (40 B float32, root 0) for ")
                .contains(", and waits in recv #0 from rank 0 (4 B int32, tag 7)")
                .endsWith("; the ranks issued different calls as #0: rank 0 allreduce #0 (40 B float32), "
                        + "rank 1 broadcast #0 (40 B float32, root 0)");
    }

    @Test
    void aStoppedOrExitedProcessIsNamed(@TempDir Path dir) throws Exception {
        Process sleeper = new ProcessBuilder("sleep", "60").start();
        try {
            FlightRecorder recorder = FlightRecorder.inFile(dir.resolve("rank-0.flight"), 0, 1, 8, "tcp");
            Ring ring = recorder.read();
            Ring stopped =
                    new Ring(ring.source(), 0, 1, sleeper.pid(), ring.host(), "tcp", ring.started(), 0, List.of());
            assertThat(FlightReport.processState(stopped)).isEmpty();
            new ProcessBuilder("kill", "-STOP", Long.toString(sleeper.pid()))
                    .start()
                    .waitFor();
            // The signal is sent when kill exits; the process stops when the kernel next runs it.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (FlightReport.processState(stopped).isEmpty() && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertThat(FlightReport.processState(stopped)).isEqualTo(" (its process " + sleeper.pid() + " is stopped)");

            // Two ranks waiting in the same call, one of them stopped: the one stopped is named.
            FlightRecorder zero = FlightRecorder.inMemory(0, 2, 8, "threads");
            zero.issued(allreduce(0, 4));
            Ring waiting = zero.read();
            Ring one = new Ring("y", 1, 2, sleeper.pid(), ring.host(), "tcp", ring.started(), 1, waiting.calls());
            assertThat(new FlightReport(List.of(waiting, one), Instant.now()).summary())
                    .matches("ranks 0, 1 wait in allreduce #0 \\(16 B float32\\) for \\d+ ms \\(rank 1's process "
                            + sleeper.pid() + " is stopped\\)");
        } finally {
            sleeper.destroyForcibly().waitFor();
        }
        Ring gone = new Ring(
                "x",
                0,
                1,
                sleeper.pid(),
                dev.cohort.runtime.HostIdentity.current(),
                "tcp",
                Instant.now(),
                0,
                List.of());
        assertThat(FlightReport.processState(gone)).isEqualTo(" (its process " + sleeper.pid() + " has exited)");
    }

    @Test
    void aRingReplacedWhileItsWriterLivesLeavesThatWriterWhole(@TempDir Path dir) throws Exception {
        Path file = dir.resolve(FlightRecorder.fileName(1));
        FlightRecorder earlier = FlightRecorder.inFile(file, 1, 3, 8, "tcp"); // rank 1 of an earlier generation
        long pending = earlier.issued(allreduce(0, 4));
        FlightRecorder now = FlightRecorder.inFile(file, 1, 2, 8, "tcp"); // another process's rank 1 now
        earlier.settled(pending, false); // its own mapping: no fault, no effect on the new file
        earlier.issued(allreduce(1, 4));
        now.issued(allreduce(0, 8));
        Ring read = FlightRecords.read(file);
        assertThat(read.size()).isEqualTo(2);
        assertThat(read.calls()).extracting(Call::describe).containsExactly("allreduce #0 (32 B float32)");
        assertThat(earlier.read().calls()).hasSize(2);
        try (var files = java.nio.file.Files.list(dir)) {
            assertThat(files.map(p -> p.getFileName().toString())).containsExactly("rank-1.flight");
        }
    }

    @Test
    void theEnvironmentChoosesWhereAndHowMany(@TempDir Path dir) {
        assertThat(FlightRecorder.forJob(Map.of(), 0, 2, "tcp")).get().satisfies(r -> {
            assertThat(r.file()).isEmpty();
            assertThat(r.capacity()).isEqualTo(FlightRecorder.DEFAULT_CAPACITY);
        });
        assertThat(FlightRecorder.forJob(Map.of(FlightRecorder.ENV_RECORDS, "0"), 0, 2, "tcp"))
                .isEmpty();
        assertThat(FlightRecorder.forJob(Map.of(FlightRecorder.ENV_DIR, dir.toString()), 1, 2, "tcp"))
                .get()
                .satisfies(r -> assertThat(r.file()).contains(dir.resolve("rank-1.flight")));
        assertThatThrownBy(() -> FlightRecorder.forJob(Map.of(FlightRecorder.ENV_RECORDS, "lots"), 0, 2, "tcp"))
                .hasMessage("COHORT_FLIGHT_RECORDS must be a number of records from 0 (record nothing) to 16777216, "
                        + "got 'lots'");
    }
}
