package dev.cohort.torch;

import dev.cohort.api.steps.CohortEvent;
import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;

/**
 * A JDK Flight Recorder event for each gradient bucket's average: from starting its allreduce (in
 * a gradient hook during backward, or at the step) until the step has it back in the gradients.
 */
@Name(BucketEvent.NAME)
@Category({"Cohort", "Training"})
@Description("A gradient bucket averaged: from starting its allreduce until the step has it back")
final class BucketEvent extends CohortEvent {

    static final String NAME = "dev.cohort.GradientBucket";

    @Label("Bucket")
    int bucket;

    @Label("Parameters")
    int parameters;

    @Label("Size")
    @DataAmount
    long bytes;

    @Label("Started during backward")
    boolean duringBackward;

    @Label("Sent as")
    String wire;

    /** Begins the event of bucket {@code index} (or returns one that records nothing when the event is off). */
    static BucketEvent begin(int index, GradientBucket b, boolean duringBackward) {
        BucketEvent e = new BucketEvent();
        if (e.isEnabled()) {
            e.bucket = index;
            e.parameters = b.params.size();
            e.bytes = b.bytes;
            e.duringBackward = duringBackward;
            e.wire = b.wire == null ? b.type.label() : b.wire.buffer.dataType().label();
            e.begin();
        }
        return e;
    }
}
