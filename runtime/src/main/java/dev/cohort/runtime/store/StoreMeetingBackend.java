package dev.cohort.runtime.store;

import dev.cohort.api.JobLayout;
import dev.cohort.api.LaunchEnvironment;
import dev.cohort.api.Topology;
import dev.cohort.runtime.EngineBackend;
import dev.cohort.runtime.EngineOptions;
import dev.cohort.runtime.GroupMeeting;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;

/**
 * An engine whose ranks meet in the job's store at {@code MASTER_ADDR:MASTER_PORT} ({@link
 * JobJoin}), on their own or as a group inside another backend (hier's group of the hosts'
 * leaders), and leave each other {@link JobNotes} there once connected.
 *
 * @param <O> the options type, with the network options such engines share ({@link Options})
 */
public abstract class StoreMeetingBackend<O extends StoreMeetingBackend.Options<O>> extends EngineBackend<O> {

    /**
     * The options of an engine whose ranks meet in the job's store and then connect to each other:
     * those of every engine, {@code --<engine>-interface} (the interface the ranks listen on, else
     * the one an environment variable names, else the one that reaches {@code MASTER_ADDR}) and
     * {@code --<engine>-spin-us} (how long a rank waiting for its peers polls).
     *
     * @param <O> the subclass, which the fluent setters return
     */
    public abstract static class Options<O extends Options<O>> extends EngineOptions<O> {

        /**
         * How long a rank waiting for its peers' data polls its connections by default before it
         * sleeps in the kernel, where its host has a CPU for every rank. Waking from that sleep takes
         * longer than a small collective takes when the data is polled for (measured:
         * docs/lab/PERFORMANCE-LOG.md).
         */
        public static final Duration DEFAULT_SPIN = Duration.ofNanos(50_000);

        /** The help of {@code --<engine>-spin-us}. */
        public static final String SPIN_HELP = "How long a rank waiting for its peers' data keeps polling its "
                + "connections before it sleeps until data arrives; 0 never polls (default: 50 when this host runs no "
                + "more ranks than it has CPUs, else 0: polling would take the CPU a rank needs).";

        private final String interfaceVariable;
        private final Text networkInterface;
        private final Micros spin;
        private GroupMeeting group;

        /**
         * @param engine the engine's name, the options' prefix
         * @param interfaceVariable the environment variable that names the interface where the option does not
         * @param interfaceHelp the help of {@code --<engine>-interface}
         */
        protected Options(String engine, String interfaceVariable, String interfaceHelp) {
            super(engine, Help.ofNetworkEngine(engine));
            this.interfaceVariable = interfaceVariable;
            this.networkInterface = textOption("interface", "IFNAME", interfaceHelp);
            this.spin = microsOption("spin-us", SPIN_HELP);
        }

        /** The network interface the ranks listen on for each other. */
        public final O networkInterface(String name) {
            networkInterface.assign(name);
            return self();
        }

        /**
         * The interface set, else the one {@code environment}'s variable names; {@code null} (or
         * blank) where neither names one.
         */
        public final String networkInterface(Map<String, String> environment) {
            String set = networkInterface.value();
            return set != null ? set : environment.get(interfaceVariable);
        }

        /** Where {@link #networkInterface(Map)} came from, for messages: the option or the variable. */
        public final String networkInterfaceSource() {
            return networkInterface.value() != null ? networkInterface.name() : interfaceVariable;
        }

        /** Polls this long before sleeping (see {@code --<engine>-spin-us}); {@link Duration#ZERO} never polls. */
        public final O spin(Duration time) {
            spin.assign(time);
            return self();
        }

        /** The polling time of a rank whose host runs {@code ranksOnThisHost} ranks: as set, else {@link #defaultSpin}. */
        public final Duration spin(int ranksOnThisHost) {
            return spin.orElse(defaultSpin(ranksOnThisHost));
        }

        /** {@link #DEFAULT_SPIN} where the host has a CPU for each of its {@code ranksOnThisHost} ranks, else none. */
        public static Duration defaultSpin(int ranksOnThisHost) {
            return spinWhereCpusAllow(ranksOnThisHost, DEFAULT_SPIN);
        }

        /**
         * Makes the backend a group that is part of another backend (hier's group of the hosts'
         * leaders): its ranks meet as {@code group} says, whatever the launch environment is, all
         * on one node (no node group, no layout learned). The network interface then comes from
         * these options only.
         */
        public final O meetingAs(GroupMeeting group) {
            this.group = Objects.requireNonNull(group, "group");
            return self();
        }

        /** The group set by {@link #meetingAs}; null: the launch environment's. */
        final GroupMeeting group() {
            return group;
        }
    }

    private static final System.Logger LOG = System.getLogger(StoreMeetingBackend.class.getName());

    /** The group this backend joins when it is part of another backend; null: the launch environment's. */
    private final GroupMeeting group;

    private volatile JobNotes notes;

    /** An engine of this process's job. */
    protected StoreMeetingBackend(String name, O options) {
        super(name, options);
        this.group = options.group();
    }

    /**
     * An engine of the launch environment {@code environment} (a program that starts ranks
     * itself), or of the group {@code options} {@linkplain Options#meetingAs meet as}.
     */
    protected StoreMeetingBackend(String name, O options, Map<String, String> environment) {
        super(name, options, environment);
        this.group = options.group();
    }

    /** The ranks meet at {@code MASTER_ADDR:MASTER_PORT} (rank 0 hosts the store there). */
    @Override
    public final boolean needsRendezvousAddress() {
        return true;
    }

    /** "N workers on one host (or H hosts): {@code how}", for {@link #autoFit}. */
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
