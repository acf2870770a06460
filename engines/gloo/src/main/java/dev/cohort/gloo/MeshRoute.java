package dev.cohort.gloo;

import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.OpKind;
import dev.cohort.tcp.algorithms.MeshCalls;
import dev.cohort.tcp.algorithms.MeshCollectives;

/**
 * The one place that decides which calls travel over the peer mesh ({@link MeshCollectives}) and
 * which through Gloo, by the call's kind, its bytes and the group's size. Users set the limit with
 * {@code --gloo-direct-max-bytes} ("direct": over Cohort's own connections); inside it is the
 * mesh's byte limit. Every rank must route alike, so every rank needs the same limit.
 */
final class MeshRoute {

    /** No limit set: the measured defaults ({@link #byDefault}). */
    static final long MEASURED = -1;
    /** With more than 2 ranks, allreduces and broadcasts up to this size go over the mesh by default. */
    static final long WHOLE_MAX_BYTES = 256 * 1024;

    private final long maxBytes;
    private final int size;

    /** {@code maxBytes}: calls up to this size go over the mesh (0: none but barriers), or {@link #MEASURED}. */
    MeshRoute(long maxBytes, int size) {
        if (maxBytes < MEASURED) {
            throw new IllegalArgumentException("--gloo-direct-max-bytes must be >= 0, got " + maxBytes);
        }
        this.maxBytes = maxBytes;
        this.size = size;
    }

    /**
     * Whether {@code call} travels over the mesh. Barriers always do (the signatures are the
     * barrier), and so do calls on 16-bit floats and the kinds the group never gives Gloo; otherwise a call that moves no bytes never does
     * (it needs only the signature check).
     */
    boolean overMesh(Collective call) {
        if (MeshCalls.alwaysCarried(call)) {
            return true;
        }
        long bytes = MeshCalls.bytes(call);
        return bytes > 0 && (maxBytes >= 0 ? bytes <= maxBytes : byDefault(call.kind(), bytes, size));
    }

    /**
     * Whether the group can give calls of {@code kind} to Gloo: the first five kinds. Reduce,
     * gather(v), scatter(v) and all-to-all(v) always travel over the mesh, in one step (each
     * pair's bytes sent once), as measured against Gloo's own ({@code ./cohort bench collectives}).
     */
    static boolean throughGloo(OpKind kind) {
        return kind.isCore() && kind != OpKind.BARRIER;
    }

    /**
     * Whether a call of {@code kind} moving {@code bytes} goes over the mesh by default, as measured
     * on loopback (docs/lab/PERFORMANCE-LOG.md). Allgather(v), reduce-scatter and barrier always: each rank
     * sends as many bytes as in Gloo's ring, in one step. Allreduce with 2 ranks always; with more,
     * up to {@link #WHOLE_MAX_BYTES}: beyond, the (p−1) whole copies lose to Gloo's ring. Broadcast
     * the same way: with 2 ranks the mesh and Gloo measured level at 16 MiB, and on the mesh the
     * consistency check is free.
     */
    static boolean byDefault(OpKind kind, long bytes, int size) {
        return switch (kind) {
            case BARRIER, ALLGATHER, ALLGATHERV, REDUCE_SCATTER -> true;
            case ALLREDUCE, BROADCAST -> size == 2 || bytes <= WHOLE_MAX_BYTES;
            default -> true;
        };
    }
}
