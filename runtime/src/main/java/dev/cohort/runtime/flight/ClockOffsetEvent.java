package dev.cohort.runtime.flight;

import dev.cohort.api.steps.CohortEvent;
import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.Timespan;

/**
 * A JDK Flight Recorder event with how far this rank's wall clock stands from rank 0's, measured
 * when a traced job joins ({@link ClockOffsets}): what {@code cohort trace} subtracts from this
 * rank's times, so that ranks on hosts with different clocks line up. Off by default.
 */
@Name(ClockOffsetEvent.NAME)
@Category({"Cohort", "Collectives"})
@Description("This rank's wall clock minus rank 0's, measured over the group when the job joined")
public final class ClockOffsetEvent extends CohortEvent {

    public static final String NAME = "dev.cohort.ClockOffset";

    @Label("Rank")
    public int rank;

    @Label("Offset")
    @Description("This rank's clock minus rank 0's")
    @Timespan
    public long offset;

    @Label("Round trip")
    @Description("The round trip of the exchange the offset comes from: the offset is good to half of it")
    @Timespan
    public long roundTrip;
}
