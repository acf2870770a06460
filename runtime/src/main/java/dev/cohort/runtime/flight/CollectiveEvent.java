package dev.cohort.runtime.flight;

import dev.cohort.api.steps.CohortEvent;
import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.EventType;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.Timespan;

/**
 * A JDK Flight Recorder event for each collective of a job's world group and its subgroups, from
 * issue to settle, on the thread that issued it: what {@code cohort trace} draws as each rank's
 * collectives. Its time splits in two: queued behind the engine's earlier calls, and on the wire
 * (the engine running it). Off by
 * default; a recording enables it ({@code cohort run --trace}, or a JFR settings file naming
 * {@value #NAME}). While it is off, collectives allocate nothing for it.
 */
@Name(CollectiveEvent.NAME)
@Category({"Cohort", "Collectives"})
@Description("A collective of the job's world group or a subgroup, from the rank issuing it until it settled")
public final class CollectiveEvent extends CohortEvent {

    public static final String NAME = "dev.cohort.Collective";

    @Label("Rank")
    public int rank;

    @Label("Engine")
    public String engine;

    @Label("Group")
    @Description("\"world\", or the subgroup's name (\"world/split-0-color-1\")")
    public String group;

    @Label("Kind")
    public String kind;

    @Label("Sequence")
    public long sequence;

    @Label("Size")
    @DataAmount
    public long bytes;

    @Label("Type")
    public String type;

    @Label("Root or peer")
    public int peer;

    @Label("Queued")
    @Description("From issue until the engine started it, behind the calls issued before it")
    @Timespan
    public long queued;

    @Label("On the wire")
    @Description("From the engine starting it until it settled")
    @Timespan
    public long wire;

    @Label("Failed")
    public boolean failed;

    /**
     * Whether a recording takes these events now. Until JFR has started in this JVM, one read of a
     * flag: the event type is registered with JFR only then.
     */
    static boolean recorded() {
        return jdk.jfr.FlightRecorder.isInitialized() && Type.TYPE.isEnabled();
    }

    /** Registered with JFR at the first look, not when the class loads. */
    private static final class Type {
        static final EventType TYPE = EventType.getEventType(CollectiveEvent.class);
    }
}
