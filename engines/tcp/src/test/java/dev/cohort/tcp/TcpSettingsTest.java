package dev.cohort.tcp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.cohort.api.OptionSettings;
import dev.cohort.cli.OptionDefaults;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * An engine's options take the command line first, then the environment, then the configuration
 * file, then their defaults; a setting they cannot take is told as the engine initializes.
 */
class TcpSettingsTest {

    @TempDir
    Path dir;

    private OptionSettings settings(Map<String, String> env) throws Exception {
        Path file = Files.writeString(
                dir.resolve("cohort.properties"), "tcp-timeout=9\ntcp-connect-timeout=11\ntcp-stall-seconds=13\n");
        java.util.Map<String, String> all = new java.util.HashMap<>(env);
        all.put(OptionSettings.ENV_CONFIG, file.toString());
        return OptionSettings.of(all);
    }

    @Test
    void theCommandLineThenTheEnvironmentThenTheFileThenTheDefault() throws Exception {
        OptionSettings settings = settings(Map.of("COHORT_TCP_CONNECT_TIMEOUT", "7", "COHORT_TCP_STALL_SECONDS", "8"));
        TcpOptions options = new TcpOptions().fromSettings(settings);
        assertThat(options.timeout()).isEqualTo(Duration.ofSeconds(9)); // the file
        assertThat(options.connectTimeout()).isEqualTo(Duration.ofSeconds(7)); // the environment

        // A program's command line, the settings behind it (BackendOptions does this).
        new CommandLine(options.commandSpec())
                .setDefaultValueProvider(OptionDefaults.of(settings))
                .parseArgs("--tcp-stall-seconds=2");
        assertThat(options.stallTime()).isEqualTo(Duration.ofSeconds(2)); // the command line
        assertThat(options.connectTimeout()).isEqualTo(Duration.ofSeconds(7));
        assertThat(options.timeout()).isEqualTo(Duration.ofSeconds(9));

        assertThat(new TcpOptions().fromSettings(OptionSettings.of(Map.of())).timeout())
                .isEqualTo(Duration.ofMinutes(5)); // the default
    }

    @Test
    void aSettingTheOptionCannotTakeIsToldAsTheEngineInitializesNamingIt() throws Exception {
        TcpOptions options = new TcpOptions().fromSettings(settings(Map.of("COHORT_TCP_TIMEOUT", "soon")));
        TcpBackend backend = new TcpBackend(options, Map.of());
        assertThatThrownBy(backend::initialize)
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("the tcp engine's settings: COHORT_TCP_TIMEOUT in the environment: ")
                .hasMessageContaining("'soon'");
        backend.close();
    }
}
