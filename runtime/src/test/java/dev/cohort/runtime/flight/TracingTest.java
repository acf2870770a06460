package dev.cohort.runtime.flight;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The recording {@code cohort run --trace} starts: its JVM options and the events its settings take. */
@Timeout(30)
class TracingTest {

    @Test
    void everyCategoryByDefaultAndOnlyThoseNamedOtherwise(@TempDir Path dir) throws Exception {
        String options = Tracing.javaOptions(dir.resolve("all"), "-Xss2m");
        Path settings = dir.resolve("all").resolve(Tracing.SETTINGS);
        assertThat(options)
                .startsWith("-Xss2m -XX:StartFlightRecording:settings=default,settings=" + settings)
                .contains(",filename=" + dir.resolve("all") + "/,dumponexit=true");
        assertThat(Files.readString(settings))
                .contains(
                        "dev.cohort.Collective",
                        "dev.cohort.Step\"",
                        "dev.cohort.StepPart",
                        "dev.cohort.GradientBucket",
                        "dev.cohort.Checkpoint",
                        "dev.cohort.Reform",
                        "dev.cohort.ClockOffset",
                        "jdk.SafepointBegin");

        Tracing.javaOptions(dir.resolve("some"), null, List.of("collectives"));
        assertThat(Files.readString(dir.resolve("some").resolve(Tracing.SETTINGS)))
                .contains("dev.cohort.Collective", "dev.cohort.ClockOffset")
                .doesNotContain("dev.cohort.Step", "dev.cohort.Reform");

        assertThatThrownBy(() -> Tracing.javaOptions(dir.resolve("bad"), null, List.of("gpu")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("no category of Cohort's events is called 'gpu'")
                .hasMessageContaining("collectives, elastic, training");
        assertThatThrownBy(() -> Tracing.javaOptions(dir.resolve("a b"), null))
                .hasMessageContaining("has a comma or a space");
    }
}
