package dev.cohort.api;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Cohort logs through {@link System.Logger}, which reaches java.util.logging here (no other
 * {@code LoggerFinder} on the class path): a user configures it under the logger name
 * {@code dev.cohort}. Auto's choice is the record these tests look for.
 */
@Timeout(value = 10, unit = TimeUnit.SECONDS)
class BackendsLoggingTest {

    /** Held for the test: java.util.logging keeps its loggers, and their levels, only while referenced. */
    private final Logger cohort = Logger.getLogger("dev.cohort");

    private final Logger root = Logger.getLogger("");
    private final Recorder recorder = new Recorder();

    /** The one backend auto can choose for one worker. */
    private static final DistributedBackend NONE = new UnconnectedBackend();

    @AfterEach
    void detach() {
        cohort.removeHandler(recorder);
        root.removeHandler(recorder);
        cohort.setLevel(null);
    }

    private static void selectAuto() {
        assertThat(Backends.select(Backends.AUTO, Map.of(Backends.NONE, NONE), Map.of()))
                .isSameAs(NONE);
    }

    @Test
    void autosChoiceIsAnInfoRecordOfTheBackendsLogger() {
        cohort.addHandler(recorder);
        selectAuto();
        assertThat(recorder.records).singleElement().satisfies(r -> {
            assertThat(r.getLoggerName()).isEqualTo("dev.cohort.api.Backends");
            assertThat(r.getLevel()).isEqualTo(Level.INFO);
            assertThat(r.getMessage())
                    .isEqualTo("backend auto (from the program): none "
                            + "(no launch environment (RANK, WORLD_SIZE): one worker)");
        });
    }

    @Test
    void levelOffForDevCohortSilencesIt() {
        root.addHandler(recorder); // where the console handler is
        cohort.setLevel(Level.OFF); // as "dev.cohort.level = OFF" in a logging.properties file
        selectAuto();
        assertThat(recorder.records).isEmpty();
        assertThat(System.getLogger(Backends.class.getName()).isLoggable(System.Logger.Level.INFO))
                .isFalse();

        cohort.setLevel(null);
        selectAuto();
        assertThat(recorder.records).as("heard again once the level is gone").hasSize(1);
    }

    /** Keeps the records it is given. */
    private static final class Recorder extends Handler {
        final List<LogRecord> records = new CopyOnWriteArrayList<>();

        Recorder() {
            setLevel(Level.ALL);
        }

        @Override
        public void publish(LogRecord record) {
            records.add(record);
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
    }
}
