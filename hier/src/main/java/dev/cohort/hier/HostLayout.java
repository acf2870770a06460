package dev.cohort.hier;

import java.util.Arrays;

/**
 * Where every rank of the job lives: {@code hosts} hosts of {@code perHost} ranks each, and the
 * global rank of local rank {@code j} of host {@code k}. The leaders learn it from each other at
 * connect time, so it holds even when a host's global ranks are not contiguous.
 */
final class HostLayout {

    final int hosts;
    final int perHost;
    /** Global rank of (host k, local rank j) at {@code k * perHost + j}: the host-major order. */
    private final int[] globalRank;
    private final int[] hostOf;
    private final int[] localOf;
    /** Whether global rank {@code g} is local rank {@code g % perHost} of host {@code g / perHost}. */
    final boolean hostMajor;

    private HostLayout(int hosts, int perHost, int[] globalRank, int[] hostOf, int[] localOf) {
        this.hosts = hosts;
        this.perHost = perHost;
        this.globalRank = globalRank;
        this.hostOf = hostOf;
        this.localOf = localOf;
        boolean identity = true;
        for (int i = 0; i < globalRank.length; i++) {
            identity &= globalRank[i] == i;
        }
        this.hostMajor = identity;
    }

    /**
     * The layout from every host's global ranks in host-major order; checks that each rank of
     * {@code [0, hosts * perHost)} appears once.
     *
     * @throws IllegalArgumentException naming a rank that appears twice or never
     */
    static HostLayout of(int hosts, int perHost, long[] hostMajor) {
        int world = hosts * perHost;
        int[] global = new int[world];
        int[] hostOf = new int[world];
        int[] localOf = new int[world];
        Arrays.fill(hostOf, -1);
        for (int i = 0; i < world; i++) {
            long g = hostMajor[i];
            int k = i / perHost;
            int j = i % perHost;
            if (g < 0 || g >= world) {
                throw new IllegalArgumentException("local rank " + j + " of host " + k + " has RANK=" + g
                        + ", outside [0, WORLD_SIZE=" + world + ")");
            }
            if (hostOf[(int) g] >= 0) {
                throw new IllegalArgumentException("RANK=" + g + " is both local rank " + localOf[(int) g] + " of host "
                        + hostOf[(int) g] + " and local rank " + j + " of host " + k + "; every process needs its own RANK");
            }
            global[i] = (int) g;
            hostOf[(int) g] = k;
            localOf[(int) g] = j;
        }
        return new HostLayout(hosts, perHost, global, hostOf, localOf);
    }

    int worldSize() {
        return globalRank.length;
    }

    int globalRank(int host, int local) {
        return globalRank[host * perHost + local];
    }

    int hostOf(int global) {
        return hostOf[global];
    }

    int localOf(int global) {
        return localOf[global];
    }

    /** The global ranks of host {@code k}, by local rank. */
    int[] ranksOf(int host) {
        return Arrays.copyOfRange(globalRank, host * perHost, (host + 1) * perHost);
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
