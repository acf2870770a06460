package dev.cohort.api.steps;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;

/**
 * A JDK Flight Recorder event for a checkpoint saved or loaded by an integration; off by default.
 * Begin it with {@link #of}, end it with {@link #done} when the file is written or read.
 */
@Name(CheckpointEvent.NAME)
@Category({"Cohort", "Training"})
@Description("A checkpoint saved or loaded")
public final class CheckpointEvent extends CohortEvent {

    public static final String NAME = "dev.cohort.Checkpoint";

    @Label("Action")
    @Description("save or load")
    String action;

    @Label("File")
    String file;

    @Label("Size")
    @DataAmount
    long bytes;

    /** Begins the event of {@code action} ("save" or "load") on {@code file}. */
    public static CheckpointEvent of(String action, java.nio.file.Path file) {
        CheckpointEvent e = new CheckpointEvent();
        if (e.isEnabled()) {
            e.action = action;
            e.file = file.toString();
            e.begin();
        }
        return e;
    }

    /** What {@code read} reads of the checkpoint {@code file}, as a load event of the time it took. */
    public static <T> T load(java.nio.file.Path file, java.util.function.Supplier<T> read) {
        CheckpointEvent loading = of("load", file);
        T loaded = read.get();
        loading.done();
        return loaded;
    }

    /** Ends the event, with the file's size as it is now. */
    public void done() {
        if (isEnabled()) {
            try {
                bytes = java.nio.file.Files.size(java.nio.file.Path.of(file));
            } catch (java.io.IOException | RuntimeException e) {
                bytes = -1;
            }
            commit();
        }
    }
}
