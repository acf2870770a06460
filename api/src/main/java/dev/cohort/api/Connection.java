package dev.cohort.api;

import dev.cohort.api.collective.ProcessGroup;
import java.util.Objects;

/**
 * What a backend's initialization produces: this process's {@link Topology}, the group of all
 * workers, the group of the workers on this node (for the node-local barrier), and what else the
 * engine must release after the groups (a rendezvous store, say).
 */
public record Connection(Topology topology, ProcessGroup world, ProcessGroup node, AutoCloseable resources)
        implements AutoCloseable {

    public Connection(Topology topology, ProcessGroup world, ProcessGroup node) {
        this(topology, world, node, () -> {});
    }

    public Connection {
        Objects.requireNonNull(topology, "topology");
        Objects.requireNonNull(world, "world");
        Objects.requireNonNull(node, "node");
        Objects.requireNonNull(resources, "resources");
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
            try {
                world.close();
            } finally {
                try {
                    resources.close();
                } catch (Exception e) {
                    throw new IllegalStateException("closing " + resources + " failed: " + e.getMessage(), e);
                }
            }
        }
    }
}
