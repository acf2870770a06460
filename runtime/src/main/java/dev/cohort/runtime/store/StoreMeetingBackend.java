package dev.cohort.runtime.store;

import dev.cohort.api.JobLayout;
import dev.cohort.api.LaunchEnvironment;
import dev.cohort.api.Topology;
import dev.cohort.runtime.EngineBackend;
import dev.cohort.runtime.EngineOptions;
import dev.cohort.runtime.GroupMeeting;
import java.util.Map;
import java.util.Objects;

/**
 * An engine whose ranks meet in the job's store at {@code MASTER_ADDR:MASTER_PORT} ({@link
 * JobJoin}), on their own or as a group inside another backend (hier's group of the hosts'
 * leaders), and leave each other {@link JobNotes} there once connected.
 *
 * @param <O> the options type
 */
public abstract class StoreMeetingBackend<O extends EngineOptions<O>> extends EngineBackend<O> {

    private static final System.Logger LOG = System.getLogger(StoreMeetingBackend.class.getName());

    /** The group this backend joins when it is part of another backend; null: the launch environment's. */
    private final GroupMeeting group;

    private volatile JobNotes notes;

    /** An engine of this process's job. */
    protected StoreMeetingBackend(String name, O options) {
        super(name, options);
        this.group = null;
    }

    /** An engine of the launch environment {@code environment} (a program that starts ranks itself). */
    protected StoreMeetingBackend(String name, O options, Map<String, String> environment) {
        super(name, options, environment);
        this.group = null;
    }

    /**
     * A group that is part of another backend: its ranks meet as {@code group} says, whatever this
     * process's own launch environment is, all on one node (no node group, no layout learned).
     */
    protected StoreMeetingBackend(String name, O options, GroupMeeting group) {
        super(name, options, Map.of());
        this.group = Objects.requireNonNull(group, "group");
    }

    /** The ranks meet at {@code MASTER_ADDR:MASTER_PORT} (rank 0 hosts the store there). */
    @Override
    public final boolean needsRendezvousAddress() {
        return true;
    }

    /** "N workers on one host (or H hosts): {@code how}", for {@link #autoReason}. */
    protected static String workersOn(JobLayout layout, String how) {
        return layout.worldSize() + " workers on " + (layout.oneHost() ? "one host" : layout.hostsText() + " hosts")
                + ": " + how;
    }

    /** Where and as whom this rank meets the others: as the group says, else as this process's launch environment does. */
    protected final GroupMeeting meeting() {
        return group != null ? group : GroupMeeting.of(LaunchEnvironment.parse(env()));
    }

    /** This rank's place before the ranks meet: the group's (one node), else the launch environment's. */
    protected final Topology given() {
        return group != null ? group.topology() : LaunchEnvironment.parseTopology(env());
    }

    /** The job's layout once the ranks met: the group's as given, else as {@link JobJoin#layout} learns it. */
    protected final Topology layout(Topology given, JobJoin.Members members) {
        return group != null
                ? given
                : JobJoin.layout(given, members.hosts(), LaunchEnvironment.layoutGiven(env()), LOG);
    }

    /** From now on {@link #notes()} are these. */
    protected final void noteIn(JobNotes jobNotes) {
        this.notes = jobNotes;
    }

    /**
     * Notes the ranks of this job leave each other in its store (see {@link JobNotes}); valid
     * from {@link #initialize()} until {@link #close()}.
     */
    public final JobNotes notes() {
        JobNotes n = notes;
        if (n == null) {
            throw new IllegalStateException(
                    "the " + name() + " backend is not initialized: call initialize() before notes()");
        }
        return n;
    }
}
