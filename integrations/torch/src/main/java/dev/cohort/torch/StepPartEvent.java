package dev.cohort.torch;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Enabled;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * A JDK Flight Recorder event for a part of a training step that an integration runs: averaging
 * the gradients (the communication backward did not hide) and the optimizer's own step. Off by
 * default, like the runtime's collective events; {@code cohort trace} draws them on the rank's tracks.
 */
@Name(StepPartEvent.NAME)
@Label("Step part")
@Category({"Cohort", "Training"})
@Description("A part of a training step: gradients averaged (the wait not hidden by backward), optimizer step")
@Enabled(false)
@StackTrace(false)
final class StepPartEvent extends Event {

    public static final String NAME = "dev.cohort.StepPart";

    /** The part averaging gradients: what the training thread waits for communication. */
    public static final String AVERAGE = "average gradients";
    /** The optimizer's own step on the averaged gradients. */
    public static final String OPTIMIZER = "optimizer step";

    @Label("Part")
    public String part;

    /** Starts the event of {@code part}; commit it with {@link #commit()}. */
    static StepPartEvent begin(String part) {
        StepPartEvent e = new StepPartEvent();
        if (e.isEnabled()) {
            e.part = part;
            e.begin();
        }
        return e;
    }
}
