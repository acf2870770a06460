package dev.cohort.api;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;

/**
 * Where this process sits: its global rank among {@code worldSize} workers, and its local rank
 * among the {@code localWorldSize} workers of node {@code nodeRank}.
 */
public record Topology(int rank, int worldSize, int localRank, int localWorldSize, int nodeRank) {

    public Topology {
        if (worldSize < 1) {
            throw new IllegalArgumentException("world size must be >= 1, got " + worldSize);
        }
        if (rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException("rank must be in [0, world size " + worldSize + "), got " + rank);
        }
        if (localWorldSize < 1 || localWorldSize > worldSize) {
            throw new IllegalArgumentException(
                    "local world size must be in [1, world size " + worldSize + "], got " + localWorldSize);
        }
        if (localRank < 0 || localRank >= localWorldSize) {
            throw new IllegalArgumentException(
                    "local rank must be in [0, local world size " + localWorldSize + "), got " + localRank);
        }
        if (nodeRank < 0) {
            throw new IllegalArgumentException("node rank must be >= 0, got " + nodeRank);
        }
    }

    /**
     * Rank {@code rank}'s place when every rank's host is known ({@code hosts}: one name per rank, in
     * rank order): its local rank counts the ranks of its host in rank order, and hosts are numbered in
     * the order of their lowest rank. The number of hosts is the number of distinct names.
     */
    public static Topology ofHosts(List<String> hosts, int rank) {
        List<String> order = new ArrayList<>(new LinkedHashSet<>(hosts));
        String mine = hosts.get(rank);
        int localRank = 0;
        int localWorld = 0;
        for (int r = 0; r < hosts.size(); r++) {
            if (hosts.get(r).equals(mine)) {
                localRank += r < rank ? 1 : 0;
                localWorld++;
            }
        }
        return new Topology(rank, hosts.size(), localRank, localWorld, order.indexOf(mine));
    }

    /** A single process: world size 1. */
    public static Topology single() {
        return new Topology(0, 1, 0, 1, 0);
    }
}
