package dev.cohort.runtime.flight;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Records a job's timeline with JDK Flight Recorder: each worker JVM records Cohort's events
 * ({@link CollectiveEvent}, the steps and their parts of {@link dev.cohort.api.steps.TrainingSteps},
 * {@link dev.cohort.api.steps.CheckpointEvent}, {@link ReformEvent}) with the JDK's default ones (GC pauses,
 * safepoints over 1 ms) into a folder, one {@code .jfr} file per JVM, which {@code cohort trace}
 * merges into one Chrome/Perfetto trace.
 */
public final class Tracing {

    /** The JFR settings file written into the folder: Cohort's events on, on top of the JDK's defaults. */
    public static final String SETTINGS = "cohort.jfc";

    /**
     * Set on every rank of a traced job (to the folder): the ranks then measure their clocks'
     * offsets from rank 0's when they join ({@link ClockOffsets}).
     */
    public static final String ENV_TRACE = "COHORT_TRACE";

    /** The variable every {@code java} launcher reads options from. */
    public static final String JAVA_OPTIONS = "JDK_JAVA_OPTIONS";

    private static final String SETTINGS_XML = """
            <?xml version="1.0" encoding="UTF-8"?>
            <configuration version="2.0" label="Cohort" description="Cohort's collectives, steps and their parts, checkpoints and re-forms, and safepoints">
              <event name="dev.cohort.Collective"><setting name="enabled">true</setting><setting name="threshold">0 ms</setting></event>
              <event name="dev.cohort.StepPart"><setting name="enabled">true</setting><setting name="threshold">0 ms</setting></event>
              <event name="dev.cohort.Step"><setting name="enabled">true</setting><setting name="threshold">0 ms</setting></event>
              <event name="dev.cohort.GradientBucket"><setting name="enabled">true</setting><setting name="threshold">0 ms</setting></event>
              <event name="dev.cohort.Checkpoint"><setting name="enabled">true</setting><setting name="threshold">0 ms</setting></event>
              <event name="dev.cohort.Reform"><setting name="enabled">true</setting><setting name="threshold">0 ms</setting></event>
              <event name="dev.cohort.ClockOffset"><setting name="enabled">true</setting><setting name="threshold">0 ms</setting></event>
              <event name="jdk.SafepointBegin"><setting name="enabled">true</setting><setting name="threshold">1 ms</setting></event>
            </configuration>
            """;

    private Tracing() {}

    /**
     * Makes {@code dir} with its settings file and returns the JVM options that record into it:
     * {@code existing} (the workers' {@value #JAVA_OPTIONS}, may be null) and the recording's.
     */
    public static String javaOptions(Path dir, String existing) throws IOException {
        Path folder = dir.toAbsolutePath();
        Files.createDirectories(folder);
        Path settings = folder.resolve(SETTINGS);
        Files.writeString(settings, SETTINGS_XML);
        if (folder.toString().contains(",") || folder.toString().contains(" ")) {
            throw new IllegalArgumentException("the trace folder " + folder
                    + " has a comma or a space, which JVM options cannot carry; pick another");
        }
        String recording = "-XX:StartFlightRecording:settings=default,settings=" + settings + ",filename=" + folder
                + "/,dumponexit=true -Xlog:jfr+startup=error";
        return existing == null || existing.isBlank() ? recording : existing + " " + recording;
    }
}
