package dev.cohort.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.ZonedDateTime;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(10)
class LogFormatTest {

    private static final String OURS = "-D" + LogFormat.FORMAT_PROPERTY + "=" + LogFormat.FORMAT;
    private static final String CONFIG_FILE = "java.util.logging.config.file";

    @Test
    void aRecordIsOneLineWithItsLevelAndLogger() {
        // SimpleFormatter's arguments: time, source, logger, level, message, throwable.
        assertThat(String.format(
                        LogFormat.FORMAT,
                        ZonedDateTime.now(),
                        "dev.cohort.api.Backends selectAuto",
                        "dev.cohort.api.Backends",
                        "INFO",
                        "backend auto (from COHORT_BACKEND): shm (one host)",
                        ""))
                .isEqualTo("INFO dev.cohort.api.Backends: backend auto (from COHORT_BACKEND): shm (one host)"
                        + System.lineSeparator());
    }

    @Test
    void workersGetTheOneLineFormatUnlessTheUserConfiguredLogging() {
        assertThat(LogFormat.workerOptions(List.of("-Xmx1g"), name -> null)).containsExactly(OURS);
        Map<String, String> afterUseHere = Map.of(LogFormat.FORMAT_PROPERTY, LogFormat.FORMAT);
        assertThat(LogFormat.workerOptions(List.of(), afterUseHere::get)).containsExactly(OURS);

        String file = "-D" + CONFIG_FILE + "=quiet.properties";
        assertThat(LogFormat.workerOptions(List.of("-Xmx1g", file), Map.of(CONFIG_FILE, "quiet.properties")::get))
                .as("a configuration file is passed on, and its format is not overridden")
                .containsExactly(file);
        String theirs = "-D" + LogFormat.FORMAT_PROPERTY + "=%5$s%n";
        assertThat(LogFormat.workerOptions(List.of(theirs), Map.of(LogFormat.FORMAT_PROPERTY, "%5$s%n")::get))
                .containsExactly(theirs);
    }
}
