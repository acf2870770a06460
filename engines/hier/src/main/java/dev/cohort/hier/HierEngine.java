package dev.cohort.hier;

import dev.cohort.api.Connection;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.LaunchEnvironment;
import dev.cohort.api.Topology;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.JoinException;
import dev.cohort.api.collective.ObjectCollectives;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.hier.HierOptions.Between;
import dev.cohort.mpi.MpiOptions;
import dev.cohort.mpi.MpiSubgroup;
import dev.cohort.runtime.AbstractProcessGroup;
import dev.cohort.runtime.EngineOptions;
import dev.cohort.runtime.GroupMeeting;
import dev.cohort.runtime.RankNames;
import dev.cohort.runtime.SharedMemoryFiles;
import dev.cohort.runtime.SubgroupMaker;
import dev.cohort.runtime.auth.JobSecret;
import dev.cohort.runtime.p2p.Directory;
import dev.cohort.runtime.p2p.PostOffice;
import dev.cohort.runtime.store.JobNotes;
import dev.cohort.shm.ShmEngine;
import dev.cohort.shm.ShmOptions;
import dev.cohort.tcp.TcpBackend;
import dev.cohort.tcp.TcpGroups;
import dev.cohort.tcp.TcpOptions;
import java.net.InetAddress;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * Joins this rank to the hierarchical group: the engine behind {@link HierBackend} (loaded
 * reflectively, because it needs JDK 22+).
 *
 * <p>Steps, all within {@code --hier-connect-timeout}: the ranks of each host attach to their shm
 * group (file {@code cohort-<run>-<restart>-<scope>-host<k>}); the leaders (local rank 0) join a
 * group of one rank per host, rank k for host k, through an ordinary gloo or tcp backend
 * ({@code --hier-between}) whose launch environment describes just the leaders (they meet at
 * {@code MASTER_ADDR:MASTER_PORT}, where host 0's leader hosts the store), or with mpi through a
 * split of the MPI job that every rank takes part in; then every rank learns
 * where every other rank lives
 * (gathered within each host, then between the leaders, then broadcast within each host).
 */
public final class HierEngine {

    private static final System.Logger LOG = System.getLogger(HierEngine.class.getName());

    private HierEngine() {}

    /** Called by {@link HierBackend#connect()}. */
    public static Connection connect(HierOptions options, Map<String, String> env) {
        Topology launched = LaunchEnvironment.parseTopology(env);
        int world = launched.worldSize();
        int perHost = options.ranksPerHost() > 0 ? options.ranksPerHost() : launched.localWorldSize();
        int hosts = hostCount(options, env, world, perHost);
        int host = options.ranksPerHost() > 0 ? launched.rank() / perHost : launched.nodeRank();
        int local = options.ranksPerHost() > 0 ? launched.rank() % perHost : launched.localRank();
        if (host >= hosts) {
            throw new IllegalArgumentException(LaunchEnvironment.GROUP_RANK + "=" + host + " but the job has " + hosts
                    + " host(s), numbered from 0");
        }
        Topology topology = new Topology(launched.rank(), world, local, perHost, host);
        String who = "hier rank " + topology.rank() + " of " + world + " (host " + host + ", local rank " + local + ")";
        long deadline = System.nanoTime() + options.connectTimeout().toNanos();

        GlobalRanks names = new GlobalRanks(host);
        ProcessGroup hostGroup;
        try {
            // hier awaits each call it makes on its groups within and between hosts: no engine threads there
            hostGroup = ShmEngine.group(
                    "shm host " + host,
                    SharedMemoryFiles.path(env, "host" + host),
                    local,
                    perHost,
                    shmOptions(options).awaitedAtOnce(true),
                    names.withinHost());
        } catch (RuntimeException e) {
            throw new JoinException(who + ": could not join the shm group of host " + host + ": " + e.getMessage(), e);
        }
        Between between;
        LeadersGroup[] leaders = new LeadersGroup[1];
        try {
            // One host has no group between hosts: nothing to choose (nor libtorch to load).
            between = hosts == 1 ? Between.AUTO : HierBackend.betweenHosts(options, env);
            if (between == Between.MPI) {
                leaders[0] = splitLeaders(options, env, host, local == 0, perHost, deadline);
            }
        } catch (RuntimeException e) {
            hostGroup.close();
            throw joinFailure(who, e);
        }
        if (topology.rank() == 0 && hosts > 1) {
            LOG.log(
                    System.Logger.Level.INFO,
                    "hier: " + hosts + " hosts, shared memory within each, " + between.label()
                            + " between their leaders");
        }
        Stages stages =
                new Stages(who, host, hosts, local == 0, hostGroup, names, between.label(), between == Between.MPI);
        try {
            stages.onLeader("connecting the hosts' leaders", deadline, left -> {
                if (leaders[0] == null) {
                    leaders[0] = connectLeaders(between, env, host, hosts, options, left, names);
                }
                stages.leaders = leaders[0].group();
                stages.notes = leaders[0].notes();
            });
            HostLayout layout = exchangeRanks(stages, topology, deadline);
            names.known(layout);
            HierProcessGroup group =
                    new HierProcessGroup(stages, layout, topology.rank(), options.timeout(), leaders[0]);
            for (ProcessGroup inner : new ProcessGroup[] {hostGroup, stages.leaders}) {
                if (inner instanceof AbstractProcessGroup g) {
                    g.reportsFlightOf(group); // their stall reports read the world's records
                }
            }
            SubgroupMaker withinHost = ShmEngine.subgroups(env, shmOptions(options));
            group.makesSubgroups(withinHost, "world");
            ((AbstractProcessGroup) group.hostView()).makesSubgroups(withinHost, "host-" + host);
            InetAddress across = hosts == 1 ? InetAddress.getLoopbackAddress() : TcpGroups.addressAcrossHosts(env);
            Optional<JobSecret> secret = JobSecret.from(env);
            group.listenOn(across, secret);
            // Messages between any two ranks: a post office of each rank's, its address gathered now.
            Directory.Gathered letters = Directory.gathered();
            PostOffice office = new PostOffice(topology.rank(), world, across, letters, who, RankNames.PLAIN, secret);
            try {
                letters.fill(ObjectCollectives.allgatherBytes(group, letters.mine()));
            } catch (RuntimeException e) {
                office.close();
                throw e;
            }
            group.messagesThrough(office);
            ((AbstractProcessGroup) group.hostView())
                    .messagesThrough(ShmEngine.messages(
                            env, "host-" + host, local, perHost, "hier host " + host, RankNames.PLAIN));
            return new Connection(topology, group, group.hostView());
        } catch (RuntimeException e) {
            hostGroup.close();
            if (leaders[0] != null) {
                leaders[0].abandon().accept(e.getMessage());
            }
            throw joinFailure(who, e);
        }
    }

    /**
     * {@code e} as a failure to join: a {@link JoinException} as it is, and misuse (this process's
     * own options or launch environment) as it is; anything else, such as a stage that failed while
     * the ranks exchanged where they live, as a {@link JoinException} naming this rank.
     */
    private static RuntimeException joinFailure(String who, RuntimeException e) {
        if (e instanceof JoinException || e instanceof IllegalArgumentException) {
            return e;
        }
        String message = String.valueOf(e.getMessage());
        return new JoinException(message.startsWith(who) ? message : who + ": could not join: " + message, e);
    }

    /** The shm options hier's groups within a host start from: its timeouts. */
    private static ShmOptions shmOptions(HierOptions options) {
        return new ShmOptions()
                .timeout(options.timeout())
                .connectTimeout(options.connectTimeout())
                .stallTime(options.stallTime());
    }

    /**
     * With mpi between hosts: every rank joins the MPI job and takes part in splitting off the
     * leaders' group (leader k as rank k); the leaders hold the group, every rank its part of MPI.
     */
    private static LeadersGroup splitLeaders(
            HierOptions options,
            Map<String, String> env,
            int host,
            boolean leader,
            int ranksOnThisHost,
            long deadline) {
        Duration left = Duration.ofNanos(Math.max(1, deadline - System.nanoTime()));
        MpiOptions mpiOptions = new MpiOptions()
                .timeout(options.timeout())
                .connectTimeout(left)
                .stallTime(options.stallTime())
                .awaitedAtOnce(true);
        options.leadersSpin().ifPresent(mpiOptions::spin);
        MpiSubgroup part = MpiSubgroup.split(
                mpiOptions, env, leader, host, "mpi group of the hier backend's host leaders", ranksOnThisHost);
        return new LeadersGroup(
                part.group().orElse(null),
                null,
                part::close,
                failure -> part.abandon(
                        failure + "; MPI cannot leave the group of host leaders while they may wait in it"));
    }

    /**
     * How many hosts the job has: {@code GROUP_WORLD_SIZE} when set (hosts may then run different
     * numbers of ranks), else WORLD_SIZE over the ranks per host, which must then be the same on
     * every host.
     */
    private static int hostCount(HierOptions options, Map<String, String> env, int world, int perHost) {
        String nodes = env.get(LaunchEnvironment.GROUP_WORLD_SIZE);
        if (options.ranksPerHost() <= 0 && nodes != null && !nodes.isBlank()) {
            int hosts;
            try {
                hosts = Integer.parseInt(nodes.trim());
            } catch (NumberFormatException e) {
                hosts = 0;
            }
            if (hosts < 1 || hosts > world) {
                throw new IllegalArgumentException(LaunchEnvironment.GROUP_WORLD_SIZE + "='" + nodes + "' must be a "
                        + "number of hosts in [1, WORLD_SIZE=" + world + "]");
            }
            return hosts;
        }
        if (world % perHost != 0) {
            throw new IllegalArgumentException("WORLD_SIZE=" + world + " is not a multiple of "
                    + (options.ranksPerHost() > 0 ? "--hier-ranks-per-host" : LaunchEnvironment.LOCAL_WORLD_SIZE)
                    + "=" + perHost + ": hosts run different numbers of ranks, and then the hier backend needs "
                    + LaunchEnvironment.GROUP_WORLD_SIZE + " (the number of hosts; ./cohort run sets it)");
        }
        return world / perHost;
    }

    /**
     * The leaders' group, on the engine {@code between} names: a gloo or tcp group of the leaders,
     * leader k as rank k, meeting where the job's rank 0 hosts the store.
     */
    private static LeadersGroup connectLeaders(
            Between between,
            Map<String, String> env,
            int host,
            int hosts,
            HierOptions options,
            Duration left,
            GlobalRanks names) {
        LaunchEnvironment launch = LaunchEnvironment.parse(env);
        // One rank per host, leader k of host k, meeting where the job's rank 0 listens.
        GroupMeeting meeting = new GroupMeeting(
                launch.masterAddr(), launch.masterPort(), launch.runId(), launch.restartCount(), host, hosts);
        // By default the leaders poll where their host has a CPU per rank; the leaders' own layout
        // (one per host, all on one "node") says nothing about that.
        Duration spin = options.leadersSpin()
                .orElseGet(() -> TcpGroups.defaultSpin(launch.topology().localWorldSize()));
        if (between == Between.GLOO) {
            return GlooLeaders.connect(options, left, names, meeting, env, spin);
        }
        TcpBackend tcp = new TcpBackend(
                asLeaders(new TcpOptions(), options, left, names)
                        .meetingAs(meeting)
                        .networkInterface(env.get(TcpOptions.ENV_INTERFACE))
                        .spin(spin),
                Map.of());
        return joined(tcp, tcp::notes);
    }

    /**
     * {@code engine}'s options for the leaders' group: hier's timeouts (the time {@code left} to
     * connect), its name in messages, global ranks, and calls awaited at once (no engine thread).
     */
    static <O extends EngineOptions<O>> O asLeaders(O engine, HierOptions options, Duration left, GlobalRanks names) {
        return engine.timeout(options.timeout())
                .connectTimeout(left)
                .stallTime(options.stallTime())
                .joinsAs("the hier backend's group of host leaders")
                .rankNames(names.betweenHosts())
                .awaitedAtOnce(true);
    }

    /** Initializes {@code backend}, then holds its group and its {@code notes}; closes it when it fails. */
    static LeadersGroup joined(DistributedBackend backend, Supplier<JobNotes> notes) {
        try {
            backend.initialize();
            return new LeadersGroup(backend.group(), notes.get(), backend::close, failure -> backend.close());
        } catch (RuntimeException e) {
            backend.close();
            throw e;
        }
    }

    /**
     * Where every rank lives: gathered within each host, then between the leaders (each host's
     * size, then its ranks), then broadcast within each host as one array: the sizes, then the
     * ranks host by host.
     */
    private static HostLayout exchangeRanks(Stages stages, Topology topology, long deadline) {
        String call = "exchanging ranks";
        int hosts = stages.hosts;
        long[] hostRanks = new long[topology.localWorldSize()];
        stages.withinHost(
                call,
                deadline,
                g -> g.allgather(DenseBuffer.of(new long[] {topology.rank()}), DenseBuffer.of(hostRanks)));
        long[] layout = new long[hosts + topology.worldSize()];
        if (hosts == 1) {
            layout[0] = hostRanks.length;
            System.arraycopy(hostRanks, 0, layout, 1, hostRanks.length);
        }
        stages.betweenHosts(call, deadline, g -> {
            // every host's rank count straight into the layout's head
            g.allgather(DenseBuffer.of(new long[] {hostRanks.length}), DenseBuffer.of(layout, 0, hosts))
                    .await();
            long total = java.util.Arrays.stream(layout, 0, hosts).sum();
            if (total != topology.worldSize()) {
                throw new JoinException(
                        stages.who + ": the hosts run "
                                + java.util.Arrays.toString(java.util.Arrays.copyOf(layout, hosts)) + " ranks, " + total
                                + " in all, not WORLD_SIZE=" + topology.worldSize(),
                        null);
            }
            int[] counts = new int[hosts];
            for (int k = 0; k < hosts; k++) {
                counts[k] = (int) layout[k];
            }
            g.allgatherv(DenseBuffer.of(hostRanks), DenseBuffer.of(layout, hosts, topology.worldSize()), counts)
                    .await();
        });
        if (hosts > 1) {
            stages.withinHost(call, deadline, g -> g.broadcast(DenseBuffer.of(layout), 0));
        }
        try {
            return HostLayout.of(
                    java.util.Arrays.copyOf(layout, hosts), java.util.Arrays.copyOfRange(layout, hosts, layout.length));
        } catch (IllegalArgumentException e) {
            throw new JoinException(stages.who + ": inconsistent launch environments: " + e.getMessage(), e);
        }
    }
}
