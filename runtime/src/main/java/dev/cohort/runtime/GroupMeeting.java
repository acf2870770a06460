package dev.cohort.runtime;

import dev.cohort.api.LaunchEnvironment;
import dev.cohort.api.Topology;
import java.util.Objects;

/**
 * Where and as whom a rank joins a group of an engine that another engine composes (hier's group
 * of the hosts' leaders, on gloo or tcp): rank {@code rank} of {@code size} meets the others at
 * the store on {@code address:port} (rank 0 hosts it), for attempt {@code attempt} of run
 * {@code run}. The group is all on one "node" as far as the engine knows: it builds no node group
 * and learns no layout.
 *
 * @param address where rank 0 hosts the store; the other ranks reach it there
 * @param port    the store's port
 * @param run     the job's run id, the same on every rank
 * @param attempt the job's restart count, the same on every rank
 * @param rank    this rank, from 0
 * @param size    the group's ranks
 */
public record GroupMeeting(String address, int port, String run, int attempt, int rank, int size) {

    public GroupMeeting {
        Objects.requireNonNull(address, "address");
        Objects.requireNonNull(run, "run");
        if (port < 1 || port > 65535) {
            throw new IllegalArgumentException("port " + port + " is not in [1, 65535]");
        }
        if (size < 1 || rank < 0 || rank >= size) {
            throw new IllegalArgumentException("rank " + rank + " is not in a group of " + size);
        }
    }

    /** The meeting a launch environment describes: its master address and run, its rank and world. */
    public static GroupMeeting of(LaunchEnvironment launch) {
        return new GroupMeeting(
                launch.masterAddr(),
                launch.masterPort(),
                launch.runId(),
                launch.restartCount(),
                launch.topology().rank(),
                launch.topology().worldSize());
    }

    /** Names this attempt of the run in the store's keys: "run/attempt". */
    public String scope() {
        return run + "/" + attempt;
    }

    /** Rank {@code rank} of {@code size}, all on one node. */
    public Topology topology() {
        return new Topology(rank, size, rank, size, 0);
    }
}
