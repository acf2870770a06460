package dev.cohort.runtime.flight;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

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

    /**
     * Cohort's events by the category {@code cohort run --trace-events} names (the JFR categories
     * under "Cohort"); the clock offsets are recorded whichever are chosen.
     */
    public static final Map<String, List<String>> CATEGORIES = Map.of(
            "collectives",
            List.of(CollectiveEvent.NAME),
            "training",
            List.of("dev.cohort.Step", "dev.cohort.StepPart", "dev.cohort.GradientBucket", "dev.cohort.Checkpoint"),
            "elastic",
            List.of(ReformEvent.NAME));

    private Tracing() {}

    /**
     * Makes {@code dir} with its settings file and returns the JVM options that record into it:
     * {@code existing} (the workers' {@value #JAVA_OPTIONS}, may be null) and the recording's,
     * which takes every category of Cohort's events.
     */
    public static String javaOptions(Path dir, String existing) throws IOException {
        return javaOptions(dir, existing, CATEGORIES.keySet());
    }

    /**
     * As {@link #javaOptions(Path, String)}, the recording taking Cohort's events of
     * {@code categories} (keys of {@link #CATEGORIES}) only.
     *
     * @throws IllegalArgumentException naming a category that is not one
     */
    public static String javaOptions(Path dir, String existing, java.util.Collection<String> categories)
            throws IOException {
        StringBuilder xml = new StringBuilder("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                + "<configuration version=\"2.0\" label=\"Cohort\" description=\"Cohort's events of "
                + String.join(", ", new java.util.TreeSet<>(categories)) + ", and safepoints\">\n");
        List<String> events = new java.util.ArrayList<>(List.of(ClockOffsetEvent.NAME));
        for (String category : categories) {
            List<String> named = CATEGORIES.get(category);
            if (named == null) {
                throw new IllegalArgumentException("no category of Cohort's events is called '" + category
                        + "'; choose from " + String.join(", ", new java.util.TreeSet<>(CATEGORIES.keySet())));
            }
            events.addAll(named);
        }
        for (String event : events) {
            xml.append(enabled(event, "0 ms"));
        }
        xml.append(enabled("jdk.SafepointBegin", "1 ms")).append("</configuration>\n");
        Path folder = dir.toAbsolutePath();
        if (folder.toString().contains(",") || folder.toString().contains(" ")) {
            throw new IllegalArgumentException("the trace folder " + folder
                    + " has a comma or a space, which JVM options cannot carry; pick another");
        }
        Files.createDirectories(folder);
        Path settings = folder.resolve(SETTINGS);
        Files.writeString(settings, xml);
        String recording = "-XX:StartFlightRecording:settings=default,settings=" + settings + ",filename=" + folder
                + "/,dumponexit=true -Xlog:jfr+startup=error";
        return existing == null || existing.isBlank() ? recording : existing + " " + recording;
    }

    private static String enabled(String event, String threshold) {
        return "  <event name=\"" + event + "\"><setting name=\"enabled\">true</setting>"
                + "<setting name=\"threshold\">" + threshold + "</setting></event>\n";
    }
}
