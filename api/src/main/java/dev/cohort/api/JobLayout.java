package dev.cohort.api;

import java.util.Map;

/**
 * How a job's workers are placed, as {@code auto} sees it: how many, how many share this host,
 * and on how many hosts.
 *
 * @param worldSize      all workers
 * @param localWorldSize the workers of this host, or 0 when the launch environment does not say
 *                       (no {@code LOCAL_*}: the engine learns the layout at rendezvous)
 * @param hosts          the number of hosts, or 0 when the launch environment does not say
 */
public record JobLayout(int worldSize, int localWorldSize, int hosts) {

    /**
     * From a launch environment ({@link LaunchEnvironment}; hosts from {@code GROUP_WORLD_SIZE} when
     * set). Without {@code LOCAL_RANK}, {@code LOCAL_WORLD_SIZE} and {@code GROUP_RANK} the layout is
     * unknown (several workers may or may not share a host): local world size and hosts 0.
     */
    public static JobLayout of(Map<String, String> env) {
        if (!LaunchEnvironment.layoutGiven(env)) {
            return new JobLayout(LaunchEnvironment.parseTopology(env).worldSize(), 0, 0);
        }
        Topology t = LaunchEnvironment.parseTopology(env);
        String nodes = env.get(LaunchEnvironment.GROUP_WORLD_SIZE);
        int hosts = nodes != null && nodes.trim().matches("[0-9]{1,6}")
                ? Integer.parseInt(nodes.trim())
                : t.worldSize() % t.localWorldSize() == 0 ? t.worldSize() / t.localWorldSize() : 0;
        return new JobLayout(t.worldSize(), t.localWorldSize(), hosts);
    }

    /** Whether every worker is known to be on this host. */
    public boolean oneHost() {
        return localWorldSize == worldSize;
    }

    /** Whether the launch environment says which workers share a host. */
    public boolean known() {
        return localWorldSize > 0;
    }

    /**
     * Whether the workers are on several hosts and some host holds more than one of them (when the
     * number of hosts is unknown, the hosts are taken to be uneven, so some holds more than one).
     */
    public boolean sharedHosts() {
        return known() && !oneHost() && (hosts == 0 || worldSize > hosts);
    }

    /** The number of hosts for messages: "2", or "several" when unknown. */
    public String hostsText() {
        return hosts > 0 ? Integer.toString(hosts) : "several";
    }
}
