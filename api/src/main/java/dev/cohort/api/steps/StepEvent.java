package dev.cohort.api.steps;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.Timespan;

/**
 * A JDK Flight Recorder event for each training step ({@link TrainingSteps.Step}), from taking its
 * batch to the end of the optimizer's step, with the time of each part; off by default.
 */
@Name(StepEvent.NAME)
@Category({"Cohort", "Training"})
@Description("A training step of a rank, from taking its batch to the optimizer's step, and its parts")
final class StepEvent extends CohortEvent {

    static final String NAME = "dev.cohort.Step";

    @Label("Rank")
    int rank;

    @Label("Step")
    long step;

    @Label("Samples")
    long samples;

    @Label("Data wait")
    @Timespan
    long dataWait;

    @Label("Computing")
    @Description("Forward and backward: the step's time outside its other parts")
    @Timespan
    long computing;

    @Label("Forward")
    @Description("Computing before backward started (all of it where nothing marked backward)")
    @Timespan
    long forward;

    @Label("Backward")
    @Description("From backward's start to the step's averaging or optimizer step")
    @Timespan
    long backward;

    @Label("Averaging gradients")
    @Timespan
    long averaging;

    @Label("Optimizer")
    @Timespan
    long optimizer;
}
