package dev.cohort.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** An option's setting: the environment's COHORT_<OPTION> first, then the file's option=value. */
class OptionSettingsTest {

    @TempDir
    Path dir;

    @Test
    void theEnvironmentComesBeforeTheFile() throws Exception {
        Path file = Files.writeString(
                dir.resolve("job.properties"), "# a comment\ngloo-timeout = 45\n--tcp-timeout=12\nnproc-per-node=3\n");
        OptionSettings s = OptionSettings.of(
                Map.of(OptionSettings.ENV_CONFIG, file.toString(), "COHORT_NPROC_PER_NODE", "2", "COHORT_EMPTY", " "));
        assertThat(s.value("--nproc-per-node")).contains("2");
        assertThat(s.source("--nproc-per-node")).contains("COHORT_NPROC_PER_NODE in the environment");
        assertThat(s.value("gloo-timeout")).contains("45");
        assertThat(s.source("--gloo-timeout")).contains("gloo-timeout in " + file.toAbsolutePath());
        assertThat(s.value("--tcp-timeout")).contains("12"); // a key may keep its dashes
        assertThat(s.value("--empty")).isEmpty(); // a blank variable sets nothing
        assertThat(s.value("--max-restarts")).isEmpty();
        assertThat(s.file()).contains(file.toAbsolutePath());
        assertThat(s.fileSettings()).containsOnlyKeys("gloo-timeout", "tcp-timeout", "nproc-per-node");
    }

    @Test
    void optionsAreNamedInTheEnvironmentByTheirLongName() {
        assertThat(OptionSettings.environmentName("--gloo-connect-timeout")).isEqualTo("COHORT_GLOO_CONNECT_TIMEOUT");
        assertThat(OptionSettings.environmentName("nproc-per-node")).isEqualTo("COHORT_NPROC_PER_NODE");
    }

    @Test
    void aConfigurationThatIsNotThereIsAnErrorNamingIt() {
        Path missing = dir.resolve("nowhere.properties");
        assertThatThrownBy(() -> OptionSettings.of(Map.of(OptionSettings.ENV_CONFIG, missing.toString())))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("COHORT_CONFIG names " + missing + ", which is not a file; make it with cohort config init,"
                        + " or unset COHORT_CONFIG");
    }

    @Test
    void withoutAFileOnlyTheEnvironmentCounts() {
        OptionSettings s = OptionSettings.of(Map.of("COHORT_GLOO_TIMEOUT", "30"));
        assertThat(s.value("--gloo-timeout")).contains("30");
        assertThat(s.fileSettings()).isEmpty();
    }
}
