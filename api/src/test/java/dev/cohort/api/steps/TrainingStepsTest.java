package dev.cohort.api.steps;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TrainingStepsTest {

    /** A part of the step that takes at least {@code millis} ms. */
    private static void work(long millis) throws InterruptedException {
        Thread.sleep(millis);
    }

    @Test
    void aStepStartsWithItsBatchAndItsPartsAddUpToIt() throws Exception {
        List<TrainingSteps.Step> seen = new CopyOnWriteArrayList<>();
        long[] fromBatchToEnd = new long[2];
        try (AutoCloseable watching = TrainingSteps.observe(seen::add)) {
            Thread t = new Thread(() -> {
                try {
                    for (int step = 0; step < 2; step++) {
                        work(30); // evaluation, a checkpoint: between steps, in no step
                        long before = System.nanoTime();
                        TrainingSteps.Timing data = TrainingSteps.begin(TrainingSteps.Part.DATA);
                        work(10);
                        data.end(16);
                        work(10); // forward
                        TrainingSteps.backwardStarted(); // the first gradient hook
                        TrainingSteps.backwardStarted(); // later ones change nothing
                        work(15); // backward
                        TrainingSteps.Timing average = TrainingSteps.begin(TrainingSteps.Part.AVERAGE);
                        work(10);
                        average.end();
                        TrainingSteps.Timing optimizer = TrainingSteps.begin(TrainingSteps.Part.OPTIMIZER);
                        work(5);
                        optimizer.end();
                        TrainingSteps.stepEnded(3);
                        fromBatchToEnd[step] = System.nanoTime() - before;
                    }
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            t.start();
            t.join();
        }
        assertThat(seen).hasSize(2);
        for (int i = 0; i < 2; i++) {
            TrainingSteps.Step s = seen.get(i);
            assertThat(s.rank()).isEqualTo(3);
            assertThat(s.number()).isEqualTo(i);
            assertThat(s.samples()).isEqualTo(16);
            assertThat(s.dataNanos()).isGreaterThanOrEqualTo(ms(10));
            assertThat(s.averageNanos()).isGreaterThanOrEqualTo(ms(10));
            assertThat(s.optimizerNanos()).isGreaterThanOrEqualTo(ms(5));
            assertThat(s.computeNanos()).isGreaterThanOrEqualTo(ms(25));
            assertThat(s.forwardNanos()).isGreaterThanOrEqualTo(ms(10));
            assertThat(s.backwardNanos()).isGreaterThanOrEqualTo(ms(15));
            assertThat(s.forwardNanos() + s.backwardNanos()).isEqualTo(s.computeNanos());
            assertThat(s.nanos())
                    .as("from taking the batch: the 30 ms before it are in no step")
                    .isLessThanOrEqualTo(fromBatchToEnd[i])
                    .isEqualTo(s.dataNanos() + s.computeNanos() + s.averageNanos() + s.optimizerNanos());
            assertThat(s.samplesPerSecond()).isCloseTo(16e9 / s.nanos(), org.assertj.core.data.Offset.offset(1e-6));
        }
    }

    @Test
    void threadsKeepStepsOfTheirOwnAndAClosedObserverHearsNothing() throws Exception {
        List<TrainingSteps.Step> seen = new CopyOnWriteArrayList<>();
        AutoCloseable watching = TrainingSteps.observe(seen::add);
        List<Thread> ranks = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            int rank = r;
            ranks.add(new Thread(() -> {
                for (int step = 0; step < 3; step++) {
                    TrainingSteps.begin(TrainingSteps.Part.DATA).end(rank + 1);
                    TrainingSteps.stepEnded(rank);
                }
            }));
        }
        ranks.forEach(Thread::start);
        for (Thread t : ranks) {
            t.join();
        }
        watching.close();
        TrainingSteps.stepEnded(0);
        assertThat(seen).hasSize(6);
        for (int r = 0; r < 2; r++) {
            int rank = r;
            assertThat(seen.stream().filter(s -> s.rank() == rank).toList())
                    .extracting(TrainingSteps.Step::number, TrainingSteps.Step::samples)
                    .containsExactly(
                            org.assertj.core.groups.Tuple.tuple(0L, rank + 1L),
                            org.assertj.core.groups.Tuple.tuple(1L, rank + 1L),
                            org.assertj.core.groups.Tuple.tuple(2L, rank + 1L));
        }
    }

    @Test
    void aRecordingTakesTheStepsTheirPartsAndCheckpoints(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("steps.jfr");
        Path checkpoint = dir.resolve("model.pt");
        try (Recording recording = new Recording()) {
            recording.enable(StepEvent.NAME).withThreshold(Duration.ZERO);
            recording.enable(StepPartEvent.NAME).withThreshold(Duration.ZERO);
            recording.enable(CheckpointEvent.NAME).withThreshold(Duration.ZERO);
            recording.start();
            Thread t = new Thread(() -> {
                TrainingSteps.begin(TrainingSteps.Part.DATA).end(8);
                TrainingSteps.begin(TrainingSteps.Part.AVERAGE).end();
                TrainingSteps.stepEnded(1);
                // Every integration saves through CheckpointFile, which records the save.
                dev.cohort.api.checkpoint.CheckpointFile.write(
                        checkpoint, tmp -> java.nio.file.Files.write(tmp, new byte[1234]));
            });
            t.start();
            t.join();
            recording.stop();
            recording.dump(file);
        }
        List<RecordedEvent> events = RecordingFile.readAllEvents(file);
        assertThat(events)
                .filteredOn(e -> e.getEventType().getName().equals(StepPartEvent.NAME))
                .extracting(e -> e.getString("part"))
                .containsExactly("data wait", "average gradients");
        RecordedEvent step = events.stream()
                .filter(e -> e.getEventType().getName().equals(StepEvent.NAME))
                .findFirst()
                .orElseThrow();
        assertThat(step.getInt("rank")).isEqualTo(1);
        assertThat(step.getLong("samples")).isEqualTo(8);
        assertThat(step.getDuration("dataWait")).isPositive();
        RecordedEvent saved = events.stream()
                .filter(e -> e.getEventType().getName().equals(CheckpointEvent.NAME))
                .findFirst()
                .orElseThrow();
        assertThat(saved.getString("action")).isEqualTo("save");
        assertThat(saved.getLong("bytes")).isEqualTo(1234);
    }

    private static long ms(long millis) {
        return TimeUnit.MILLISECONDS.toNanos(millis);
    }
}
