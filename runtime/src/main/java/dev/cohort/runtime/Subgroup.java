package dev.cohort.runtime;

import java.time.Duration;
import java.util.Arrays;

/**
 * What an engine needs to make a subgroup of one of its groups ({@link AbstractProcessGroup#split},
 * {@link AbstractProcessGroup#newGroup}): every member makes it at the same call, knowing the same
 * {@code name} (unique within the parent group), the members and this rank.
 *
 * @param name    unique among the parent's subgroups, the same on every member ("split-3-color-1")
 * @param members the members' ranks in the parent group, in their order in the subgroup
 * @param global  the members' global ranks (in the job), for messages
 * @param rank    this process's rank in the subgroup
 * @param color   the color its members passed (newGroup: 0)
 * @param timeout the parent's timeout: for connecting, and for each of the subgroup's collectives
 */
public record Subgroup(String name, int[] members, int[] global, int rank, int color, Duration timeout) {

    public int size() {
        return members.length;
    }

    /** For the subgroup's messages: "split-3-color-1 (global ranks [1, 3])". */
    public String label() {
        return name + " (global ranks " + Arrays.toString(global) + ")";
    }

    /** Names the subgroup's ranks by their global ranks in messages. */
    public RankNames names() {
        return r -> "global rank " + global[r];
    }

    /** The rank that makes shared resources (rank 0 of the subgroup). */
    public boolean leads() {
        return rank == 0;
    }
}
