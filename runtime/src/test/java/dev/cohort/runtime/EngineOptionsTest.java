package dev.cohort.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Option;

/** The options every engine shares, under its own prefix, beside the engine's own. */
class EngineOptionsTest {

    static final class ToyOptions extends EngineOptions<ToyOptions> {
        @Option(names = "--toy-depth")
        int depth = 1;

        ToyOptions() {
            super("toy", new Help("each call", "meeting", "stalls"));
        }
    }

    @Test
    void defaultsAreFiveMinutesSixtySecondsAndThirtySeconds() {
        ToyOptions o = new ToyOptions();
        assertThat(o.timeout()).isEqualTo(Duration.ofMinutes(5));
        assertThat(o.connectTimeout()).isEqualTo(Duration.ofSeconds(60));
        assertThat(o.stallTime()).isEqualTo(Duration.ofSeconds(30));
    }

    @Test
    void theCommandLineTakesTheSharedOptionsUnderThePrefixBesideTheEnginesOwn() {
        ToyOptions o = new ToyOptions()
                .parse("--toy-timeout=1.5", "--toy-connect-timeout", "7", "--toy-stall-seconds=2", "--toy-depth=3");
        assertThat(o.timeout()).isEqualTo(Duration.ofMillis(1500));
        assertThat(o.connectTimeout()).isEqualTo(Duration.ofSeconds(7));
        assertThat(o.stallTime()).isEqualTo(Duration.ofSeconds(2));
        assertThat(o.depth).isEqualTo(3);
        assertThat(o.commandSpec().findOption("--toy-timeout").description()).containsExactly("each call");
    }

    @Test
    void aCommandLineWithoutTheOptionsKeepsTheDefaultsQuietly() {
        java.io.PrintStream saved = System.err;
        java.io.ByteArrayOutputStream err = new java.io.ByteArrayOutputStream();
        System.setErr(new java.io.PrintStream(err, true));
        try {
            ToyOptions o = new ToyOptions().parse();
            assertThat(o.timeout()).isEqualTo(Duration.ofMinutes(5));
            CommandLine cli = new CommandLine(CommandLine.Model.CommandSpec.create());
            cli.getCommandSpec().addMixin("toy", new ToyOptions().commandSpec());
            cli.parseArgs();
        } finally {
            System.setErr(saved);
        }
        assertThat(err.toString()).as("picocli's warnings").isEmpty();
    }

    @Test
    void fluentSettersReturnTheEnginesOwnType() {
        ToyOptions o = new ToyOptions().timeout(Duration.ofSeconds(9)).stallTime(Duration.ofSeconds(1));
        assertThat(o.timeout()).isEqualTo(Duration.ofSeconds(9));
        assertThat(o.stallTime()).isEqualTo(Duration.ofSeconds(1));
    }

    @Test
    void badValuesNameTheOption() {
        assertThatThrownBy(() -> new ToyOptions().timeout(Duration.ZERO))
                .hasMessageContaining("--toy-timeout must be positive");
        assertThatThrownBy(
                        () -> new ToyOptions().parse("--toy-connect-timeout=-1").connectTimeout())
                .hasMessageContaining("--toy-connect-timeout must be a positive number of seconds");
        assertThatThrownBy(() -> new ToyOptions().parse("--toy-timeout=soon"))
                .isInstanceOf(CommandLine.ParameterException.class)
                .hasMessageContaining("--toy-timeout");
    }
}
