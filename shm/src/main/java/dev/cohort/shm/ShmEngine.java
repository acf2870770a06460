package dev.cohort.shm;

import dev.cohort.core.Connection;
import dev.cohort.core.Topology;
import dev.cohort.core.env.LaunchEnvironment;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
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
        Path path = mappingPath(env);
        String who = "shm world rank " + topology.rank() + " of " + topology.worldSize();
        ShmRegion region = ShmRegion.attach(path, topology.localRank(), topology.localWorldSize(),
                options.segmentBytes(), options.connectTimeout(), who);
        ShmProcessGroup world = new ShmProcessGroup("shm world", region, options.timeout());
        // One host: the node group is the world group (Connection closes it once).
        return new Connection(topology, world, world);
    }

    /**
     * {@code /dev/shm/cohort-<run id>-<restart count>-<hash>}: the hash covers the user id and
     * {@code MASTER_ADDR}/{@code MASTER_PORT} (a launcher picks a free port per job), so two jobs
     * with the same run id on one host, or two users, use different files.
     */
    static Path mappingPath(Map<String, String> env) {
        String runId = LaunchEnvironment.parseRunId(env);
        String restarts = env.getOrDefault(LaunchEnvironment.RESTART_COUNT, "0").trim();
        if (!restarts.matches("[0-9]{1,9}")) {
            throw new IllegalArgumentException("environment variable " + LaunchEnvironment.RESTART_COUNT + "='"
                    + restarts + "' must be an integer >= 0");
        }
        String scope = userId() + "|" + env.getOrDefault(LaunchEnvironment.MASTER_ADDR, "") + "|"
                + env.getOrDefault(LaunchEnvironment.MASTER_PORT, "");
        long h = 0xCBF29CE484222325L;
        for (byte b : scope.getBytes(StandardCharsets.UTF_8)) {
            h = (h ^ (b & 0xFF)) * 0x100000001B3L;
        }
        String name = ShmPaths.PREFIX + runId + "-" + Integer.parseInt(restarts) + "-"
                + String.format("%012x", h & 0xFFFFFFFFFFFFL);
        return Path.of(ShmPaths.DIRECTORY, name);
    }

    private static String userId() {
        try {
            return String.valueOf(Files.getAttribute(Path.of("/proc/self"), "unix:uid"));
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
            return System.getProperty("user.name", "");
        }
    }
}
