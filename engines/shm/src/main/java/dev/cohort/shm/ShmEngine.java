package dev.cohort.shm;

import dev.cohort.api.Connection;
import dev.cohort.api.LaunchEnvironment;
import dev.cohort.api.Topology;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.runtime.AbstractProcessGroup;
import dev.cohort.runtime.RankNames;
import dev.cohort.runtime.SharedMemoryFiles;
import dev.cohort.runtime.SubgroupMaker;
import dev.cohort.runtime.auth.JobSecret;
import dev.cohort.runtime.p2p.Directory;
import dev.cohort.runtime.p2p.PostOffice;
import dev.cohort.shm.region.ShmAttachment;
import dev.cohort.shm.region.ShmLayout;
import java.net.InetAddress;
import java.nio.file.Path;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Joins the ranks of this host to one {@link ShmProcessGroup}: the engine behind
 * {@link ShmBackend} (loaded reflectively, because it needs JDK 22+).
 */
public final class ShmEngine {

    private ShmEngine() {}

    /** Called by {@link ShmBackend#connect()}. */
    public static Connection connect(ShmOptions options, Map<String, String> env) {
        Topology topology = LaunchEnvironment.parseTopology(env);
        if (topology.localWorldSize() != topology.worldSize()) {
            throw new IllegalArgumentException("the shm backend connects the ranks of one host only, but "
                    + LaunchEnvironment.WORLD_SIZE + "=" + topology.worldSize() + " and "
                    + LaunchEnvironment.LOCAL_WORLD_SIZE + "=" + topology.localWorldSize()
                    + "; use --distributed-backend gloo for several hosts (tcp in a program that uses DJL, whose libtorch "
                    + "cannot share a process with gloo's)");
        }
        ProcessGroup world = group(
                "shm world", SharedMemoryFiles.path(env), topology.localRank(), topology.localWorldSize(), options);
        ((AbstractProcessGroup) world).makesSubgroups(subgroups(env, options), "world");
        ((AbstractProcessGroup) world)
                .messagesThrough(messages(
                        env, "world", topology.localRank(), topology.localWorldSize(), "shm world", RankNames.PLAIN));
        // One host: the node group is the world group (Connection closes it once).
        return new Connection(topology, world, world);
    }

    /**
     * Attaches rank {@code rank} of {@code size} to the group that maps {@code path} (see
     * {@link SharedMemoryFiles#path(Map, String)}), for engines that combine shm with others: the
     * hierarchical backend's group of the ranks of one host. Every rank of the group passes the
     * same path, size and options; {@code label} starts the group's messages ("shm host 1").
     */
    public static ProcessGroup group(String label, Path path, int rank, int size, ShmOptions options) {
        return group(label, path, rank, size, options, RankNames.PLAIN);
    }

    /**
     * Makes subgroups of ranks of this host as shm groups of their own, each in a file named after
     * its scope ({@link SharedMemoryFiles#path(Map, String)}).
     */
    public static SubgroupMaker subgroups(Map<String, String> env, ShmOptions options) {
        return (scope, spec) -> {
            AbstractProcessGroup g = (AbstractProcessGroup) group(
                    "shm " + spec.label(),
                    SharedMemoryFiles.path(env, SubgroupMaker.shortName(scope)),
                    spec.rank(),
                    spec.size(),
                    options,
                    spec.names());
            g.messagesThrough(messages(env, scope, spec.rank(), spec.size(), "shm " + scope, spec.names()));
            return g;
        };
    }

    /**
     * Sends and receives between ranks of this host: over loopback connections, each rank's port
     * in a small file beside the group's mapping (removed when the group closes).
     */
    public static Supplier<PostOffice> messages(
            Map<String, String> env, String scope, int rank, int size, String label, RankNames names) {
        String prefix = "p" + SubgroupMaker.shortName(scope) + "r";
        return () -> new PostOffice(
                rank,
                size,
                InetAddress.getLoopbackAddress(),
                Directory.inFiles(r -> SharedMemoryFiles.path(env, prefix + r)),
                label + " rank " + rank + " of " + size,
                names,
                JobSecret.from(env));
    }

    /** As {@link #group(String, Path, int, int, ShmOptions)}, with messages naming ranks by {@code names}. */
    public static ProcessGroup group(String label, Path path, int rank, int size, ShmOptions options, RankNames names) {
        String who = label + " rank " + rank + " of " + size;
        ShmAttachment attachment = ShmAttachment.attach(
                path,
                rank,
                new ShmLayout(size, options.segmentBytes(), options.arenaBytes()),
                options.connectTimeout(),
                who);
        return new ShmProcessGroup(
                label, attachment, options.timeout(), options.stallTime(), names, options.queueOptions());
    }
}
