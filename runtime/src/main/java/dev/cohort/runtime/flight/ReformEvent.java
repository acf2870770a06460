package dev.cohort.runtime.flight;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Enabled;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * A JDK Flight Recorder event for an elastic job's worker leaving one generation of the group for
 * the next: from letting go of the old group until the new one is connected; off by default.
 */
@Name(ReformEvent.NAME)
@Label("Group re-formed")
@Category({"Cohort", "Elastic"})
@Description("An elastic job's worker moved from one generation of the group to the next")
@Enabled(false)
@StackTrace(false)
public final class ReformEvent extends Event {

    public static final String NAME = "dev.cohort.Reform";

    @Label("From generation")
    public int from;

    @Label("To generation")
    public int to;

    @Label("Why")
    public String why;
}
