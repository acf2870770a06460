package dev.cohort.runtime.flight;

import dev.cohort.api.steps.CohortEvent;
import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;

/**
 * A JDK Flight Recorder event for an elastic job's worker leaving one generation of the group for
 * the next: from letting go of the old group until the new one is connected; off by default.
 */
@Name(ReformEvent.NAME)
@Category({"Cohort", "Elastic"})
@Description("An elastic job's worker moved from one generation of the group to the next")
public final class ReformEvent extends CohortEvent {

    public static final String NAME = "dev.cohort.Reform";

    @Label("From generation")
    public int from;

    @Label("To generation")
    public int to;

    @Label("Why")
    public String why;
}
