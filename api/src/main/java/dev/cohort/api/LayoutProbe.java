package dev.cohort.api;

import java.util.Map;

/**
 * Learns which workers share a host where the launch environment says only {@code RANK},
 * {@code WORLD_SIZE}, {@code MASTER_ADDR} and {@code MASTER_PORT} (a pod per rank, a launcher of a
 * program's own), so that {@link Backends#auto} chooses knowing the layout: shared memory on one
 * host, hier where hosts hold several workers. cohort-runtime provides one ({@link
 * java.util.ServiceLoader}); without one, {@code auto} chooses as for an unknown layout.
 */
public interface LayoutProbe {

    /**
     * {@code env} with {@code LOCAL_RANK}, {@code LOCAL_WORLD_SIZE}, {@code GROUP_RANK} and
     * {@code GROUP_WORLD_SIZE} added as the workers' hosts say. Every worker of the job calls it
     * at once; it returns when all have met, or throws naming who did not come.
     */
    Map<String, String> learn(Map<String, String> env);
}
