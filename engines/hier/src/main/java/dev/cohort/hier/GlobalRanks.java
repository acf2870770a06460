package dev.cohort.hier;

import dev.cohort.runtime.RankNames;

/**
 * Names the ranks of hier's sub-groups by their global ranks in messages, once the leaders have
 * exchanged the hosts' ranks (until then, by their sub-group ranks only): the ranks of a host's shm
 * group are its local ranks; in the leaders' group, rank k is the leader of host k.
 */
final class GlobalRanks {

    private final int host;
    private volatile HostLayout layout;

    GlobalRanks(int host) {
        this.host = host;
    }

    void known(HostLayout layout) {
        this.layout = layout;
    }

    HostLayout layout() {
        return layout;
    }

    /** Names the local ranks of this host's shm group. */
    RankNames withinHost() {
        return r -> {
            HostLayout l = layout;
            return l == null ? null : r < l.sizeOf(host) ? "global rank " + l.globalRank(host, r) : "?";
        };
    }

    /** Names the ranks of the leaders' group. */
    RankNames betweenHosts() {
        return k -> {
            HostLayout l = layout;
            return l == null
                    ? null
                    : k < l.hosts ? "global rank " + l.globalRank(k, 0) + " (leader of host " + k + ")" : "?";
        };
    }
}
