package dev.cohort.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.cohort.api.ProgressReporter.Finished;
import dev.cohort.api.ProgressReporter.Marker;
import dev.cohort.api.ProgressReporter.Update;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 10, unit = TimeUnit.SECONDS)
class ProgressReporterTest {

    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    private final PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);

    private List<String> lines() {
        return bytes.toString(StandardCharsets.UTF_8).lines().toList();
    }

    @Test
    void underTheLauncherWritesMarkersThatParseBack() {
        ProgressReporter progress = ProgressReporter.to(out, Map.of(ProgressReporter.ENV, ProgressReporter.LAUNCHER));
        progress.start("epoch 1/2", 10, "steps");
        progress.update(1, "loss 2.30");
        for (int i = 2; i < 10; i++) {
            progress.update(i, "loss 1"); // within the marker interval: not written
        }
        progress.update(10, "loss 0.5"); // the task's last: always written
        progress.finish();

        assertThat(lines()).hasSize(3).allMatch(Marker::isMarker);
        assertThat(Marker.parse(lines().get(0))).contains(new Update("epoch 1/2", 1, 10, "steps", "loss 2.30"));
        assertThat(Marker.parse(lines().get(1))).contains(new Update("epoch 1/2", 10, 10, "steps", "loss 0.5"));
        assertThat(Marker.parse(lines().get(2))).contains(new Finished());
    }

    @Test
    void elsewhereWritesPlainLinesAndNoMarker() {
        ProgressReporter progress = ProgressReporter.to(out, Map.of());
        progress.start("epoch 1/2", 469, "steps");
        AtomicInteger asked = new AtomicInteger();
        for (int i = 1; i <= 469; i++) {
            progress.update(i, () -> "loss " + asked.incrementAndGet());
        }
        progress.finish();
        assertThat(lines()).containsExactly("epoch 1/2: 1/469 steps (0%), loss 1");
        assertThat(asked).hasValue(1); // the text is made only for a line
    }

    @Test
    void silentWritesNothingAndUpdateNeedsAStart() {
        ProgressReporter silent = ProgressReporter.silent();
        silent.update(3, "x");
        silent.finish();
        ProgressReporter progress = ProgressReporter.to(out, Map.of());
        assertThatThrownBy(() -> progress.update(1, "x"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("start");
        assertThat(lines()).isEmpty();
    }

    @Test
    void wordsLoseTabsAndLineBreaksAndUnknownTotalsReadWell() {
        Update u = new Update("load\tdata", 7, 0, "files", "a\nb");
        assertThat(u.describe()).isEqualTo("load data: 7 files, a b");
        assertThat(Marker.parse(u.line())).contains(u);
        assertThat(new Update("t", 3, 4, "steps", "").describe()).isEqualTo("t: 3/4 steps (75%)");
    }

    @Test
    void malformedMarkersAreMarkersButParseToNothing() {
        for (String line : List.of(
                "@cohort-progress\t",
                "@cohort-progress\tupdate\t1\t2\tsteps\ttask",
                "@cohort-progress\tupdate\tx\t2\tsteps\ttask\ttext",
                "@cohort-progress\tupdate\t-1\t2\tu\tt\tx",
                "@cohort-progress\tnews")) {
            assertThat(Marker.isMarker(line)).as(line).isTrue();
            assertThat(Marker.parse(line)).as(line).isEmpty();
        }
        assertThat(Marker.isMarker("epoch 1/2: 3/4 steps")).isFalse();
        assertThat(Marker.parse("@cohort-progress update 1 2")).isEmpty();
    }
}
