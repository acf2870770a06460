package dev.cohort.shm;

import dev.cohort.core.Connection;
import dev.cohort.core.Topology;
import dev.cohort.core.env.LaunchEnvironment;
import dev.cohort.core.env.SharedMemoryFiles;
import java.nio.file.Path;
import java.util.Map;

/**
 * Joins the ranks of this host to one {@link ShmProcessGroup}: the engine behind
 * {@link ShmBackend} (loaded reflectively, because it needs JDK 22+).
 */
public final class ShmEngine {

    private ShmEngine() {
    }

    /** Called by {@link ShmBackend#connect()}. */
    public static Connection connect(ShmOptions options, Map<String, String> env) {
        Topology topology = LaunchEnvironment.parseTopology(env);
        if (topology.localWorldSize() != topology.worldSize()) {
            throw new IllegalArgumentException("the shm backend connects the ranks of one host only, but "
                    + LaunchEnvironment.WORLD_SIZE + "=" + topology.worldSize() + " and "
                    + LaunchEnvironment.LOCAL_WORLD_SIZE + "=" + topology.localWorldSize()
                    + "; use --distributed-backend gloo for several hosts");
        }
        Path path = SharedMemoryFiles.path(env);
        String who = "shm world rank " + topology.rank() + " of " + topology.worldSize();
        ShmRegion region = ShmRegion.attach(path, topology.localRank(), topology.localWorldSize(),
                options.segmentBytes(), options.arenaBytes(), options.connectTimeout(), who);
        ShmProcessGroup world = new ShmProcessGroup("shm world", region, options.timeout(), options.stallTime());
        // One host: the node group is the world group (Connection closes it once).
        return new Connection(topology, world, world);
    }
}
