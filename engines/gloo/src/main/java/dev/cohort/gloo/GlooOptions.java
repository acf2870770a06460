package dev.cohort.gloo;

import dev.cohort.runtime.store.StoreMeetingBackend;
import picocli.CommandLine.Option;

/**
 * The gloo backend's command-line options, each with its default. {@code --gloo-interface}
 * defaults to the {@code GLOO_SOCKET_IFNAME} environment variable, as in PyTorch.
 */
public final class GlooOptions extends StoreMeetingBackend.Options<GlooOptions> {

    @Option(
            names = "--gloo-consistency-check",
            negatable = true,
            defaultValue = "true",
            fallbackValue = "true",
            description = "Before each collective the ranks compare what they call (operation, type, length, "
                    + "reduce op, root, order) and all fail naming the difference instead of hanging or "
                    + "returning wrong data (default: on; --no-gloo-consistency-check only to measure its cost).")
    boolean consistencyCheck = true;

    @Option(
            names = "--gloo-direct-max-bytes",
            paramLabel = "BYTES",
            description = "Collectives up to this size (the output's for allgather) travel over Cohort's own peer "
                    + "connections (one pipelined message each way) instead of through Gloo; 0 sends all through Gloo; needs "
                    + "the consistency check, and the same value on every rank (default: allgather, allgatherv, "
                    + "reduce-scatter and barrier always; allreduce and broadcast always with 2 ranks, else up to "
                    + MeshRoute.WHOLE_MAX_BYTES + ").")
    int meshMaxBytes = (int) MeshRoute.MEASURED;

    private boolean agentStore;

    @Option(
            names = "--gloo-rendezvous",
            paramLabel = "URI",
            description = "env:// (MASTER_ADDR/MASTER_PORT, rank 0 hosts a TCP store; the default) or "
                    + "file:///PATH (a file on a filesystem all ranks share).")
    String rendezvous = "env://";

    public GlooOptions() {
        super(
                "gloo",
                GlooBackend.ENV_INTERFACE,
                "Network interface Gloo binds to (default: " + GlooBackend.ENV_INTERFACE
                        + ", else the interface that reaches MASTER_ADDR).");
    }

    /** Turns the always-on consistency check off (for measuring its cost; see --gloo-consistency-check). */
    public GlooOptions consistencyCheck(boolean on) {
        this.consistencyCheck = on;
        return this;
    }

    /** Collectives up to {@code bytes} go over the peer mesh; 0: all through Gloo. */
    public GlooOptions directMaxBytes(int bytes) {
        this.meshMaxBytes = nonNegative("direct-max-bytes", bytes);
        return this;
    }

    /**
     * Whether the ranks meet in a store the launcher's agent hosts (torchrun's) rather than one
     * rank 0 hosts; by default as the launch environment says ({@code COHORT_AGENT_STORE}).
     */
    public GlooOptions agentStore(boolean agent) {
        this.agentStore = agent;
        return this;
    }

    public GlooOptions rendezvous(String uri) {
        this.rendezvous = uri;
        return this;
    }

    // ---- what the backend reads

    boolean consistencyCheck() {
        return consistencyCheck;
    }

    /** Which calls of a group of {@code size} ranks go over the mesh (rejects a negative --gloo-direct-max-bytes). */
    MeshRoute meshRoute(int size) {
        return new MeshRoute(meshMaxBytes, size);
    }

    boolean agentStore() {
        return agentStore;
    }
}
