package dev.cohort.core;

import dev.cohort.core.collective.ProcessGroup;
import java.util.Objects;

/**
 * What a backend's initialization produces: this process's {@link Topology}, the group of all
 * workers, and the group of the workers on this node (for the node-local barrier).
 */
public record Connection(Topology topology, ProcessGroup world, ProcessGroup node) implements AutoCloseable {

    public Connection {
        Objects.requireNonNull(topology, "topology");
        Objects.requireNonNull(world, "world");
        Objects.requireNonNull(node, "node");
        if (world.size() != topology.worldSize() || world.rank() != topology.rank()) {
            throw new IllegalArgumentException("world group " + world + " does not match " + topology);
        }
        if (node.size() != topology.localWorldSize() || node.rank() != topology.localRank()) {
            throw new IllegalArgumentException("node group " + node + " does not match " + topology);
        }
    }

    @Override
    public void close() {
        try {
            if (node != world) {
                node.close();
            }
        } finally {
            world.close();
        }
    }
}
