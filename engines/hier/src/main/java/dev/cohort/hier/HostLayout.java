package dev.cohort.hier;

import java.util.Arrays;

/**
 * Where every rank of the job lives: {@code hosts} hosts, host k with {@link #sizeOf(int)} ranks
 * (hosts may run different numbers), and the global rank of local rank {@code j} of host
 * {@code k}. The leaders learn it from each other at connect time, so it holds even when a host's
 * global ranks are not contiguous.
 */
final class HostLayout {

    final int hosts;
    /** Ranks of host k, and where host k's ranks begin in the host-major order. */
    private final int[] sizes;

    private final int[] starts;
    /** Global rank of (host k, local rank j) at {@code starts[k] + j}: the host-major order. */
    private final int[] globalRank;

    private final int[] hostOf;
    private final int[] localOf;
    /** Whether global ranks run host by host, local rank by local rank (the host-major order is the identity). */
    final boolean hostMajor;
    /** Whether every host runs the same number of ranks. */
    final boolean uniform;

    private HostLayout(int[] sizes, int[] starts, int[] globalRank, int[] hostOf, int[] localOf) {
        this.hosts = sizes.length;
        this.sizes = sizes;
        this.starts = starts;
        this.globalRank = globalRank;
        this.hostOf = hostOf;
        this.localOf = localOf;
        boolean identity = true;
        for (int i = 0; i < globalRank.length; i++) {
            identity &= globalRank[i] == i;
        }
        this.hostMajor = identity;
        this.uniform = Arrays.stream(sizes).allMatch(s -> s == sizes[0]);
    }

    /**
     * The layout from every host's size and its global ranks in host-major order; checks that
     * each rank of {@code [0, sum of sizes)} appears once.
     *
     * @throws IllegalArgumentException naming a rank that appears twice or never, or a host without ranks
     */
    static HostLayout of(long[] sizes, long[] hostMajor) {
        int hosts = sizes.length;
        int[] size = new int[hosts];
        int[] start = new int[hosts];
        int world = 0;
        for (int k = 0; k < hosts; k++) {
            if (sizes[k] < 1) {
                throw new IllegalArgumentException("host " + k + " has LOCAL_WORLD_SIZE=" + sizes[k]);
            }
            size[k] = (int) sizes[k];
            start[k] = world;
            world += size[k];
        }
        if (hostMajor.length != world) {
            throw new IllegalArgumentException("the hosts' LOCAL_WORLD_SIZEs " + Arrays.toString(sizes) + " add up to "
                    + world + ", not WORLD_SIZE=" + hostMajor.length);
        }
        int[] global = new int[world];
        int[] hostOf = new int[world];
        int[] localOf = new int[world];
        Arrays.fill(hostOf, -1);
        for (int k = 0; k < hosts; k++) {
            for (int j = 0; j < size[k]; j++) {
                int i = start[k] + j;
                long g = hostMajor[i];
                if (g < 0 || g >= world) {
                    throw new IllegalArgumentException("local rank " + j + " of host " + k + " has RANK=" + g
                            + ", outside [0, WORLD_SIZE=" + world + ")");
                }
                if (hostOf[(int) g] >= 0) {
                    throw new IllegalArgumentException(
                            "RANK=" + g + " is both local rank " + localOf[(int) g] + " of host " + hostOf[(int) g]
                                    + " and local rank " + j + " of host " + k + "; every process needs its own RANK");
                }
                global[i] = (int) g;
                hostOf[(int) g] = k;
                localOf[(int) g] = j;
            }
        }
        return new HostLayout(size, start, global, hostOf, localOf);
    }

    int worldSize() {
        return globalRank.length;
    }

    int sizeOf(int host) {
        return sizes[host];
    }

    int globalRank(int host, int local) {
        return globalRank[starts[host] + local];
    }

    int hostOf(int global) {
        return hostOf[global];
    }

    int localOf(int global) {
        return localOf[global];
    }

    /** The global ranks of host {@code k}, by local rank. */
    int[] ranksOf(int host) {
        return Arrays.copyOfRange(globalRank, starts[host], starts[host] + sizes[host]);
    }

    /** Host k's leaders, e.g. "0 -> global rank 0, 1 -> global rank 2", for messages. */
    String leaders() {
        StringBuilder s = new StringBuilder();
        for (int k = 0; k < hosts; k++) {
            s.append(k == 0 ? "" : ", ").append(k).append(" -> global rank ").append(globalRank(k, 0));
        }
        return s.toString();
    }
}
