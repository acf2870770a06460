package dev.cohort.api.steps;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;

/**
 * A JDK Flight Recorder event for a part of a training step ({@link TrainingSteps.Part}): taking
 * the batch, averaging the gradients (the communication backward did not hide), the optimizer's
 * step. Off by default; {@code cohort trace} draws them on the rank's tracks.
 */
@Name(StepPartEvent.NAME)
@Category({"Cohort", "Training"})
@Description(
        "A part of a training step: data wait, gradients averaged (the wait not hidden by backward), optimizer step")
final class StepPartEvent extends CohortEvent {

    static final String NAME = "dev.cohort.StepPart";

    @Label("Part")
    String part;
}
