package dev.cohort.tcp.algorithms;

import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.OpKind;

/**
 * What a group on the mesh needs to know of a call before it picks {@link MeshCollectives#carry}
 * (the call over the mesh) or {@link MeshCollectives#agree} (its signature checked alone).
 */
public final class MeshCalls {

    private MeshCalls() {}

    /**
     * Whether the mesh must carry {@code call} itself whatever its size: barriers (the signatures
     * are the barrier), the kinds beyond allreduce, broadcast, allgather(v) and reduce-scatter
     * (no other engine below the mesh runs them), and 16-bit floats (the mesh computes in float32
     * and rounds once).
     */
    public static boolean alwaysCarried(Collective call) {
        OpKind kind = call.kind();
        return kind == OpKind.BARRIER
                || !kind.isCore()
                || (call.dataType() != null && call.dataType().isHalfPrecision());
    }

    /** The bytes a call moves, as a size limit counts them: the output's for allgather(v), the input's otherwise. */
    public static long bytes(Collective call) {
        return switch (call.kind()) {
            case ALLGATHER, ALLGATHERV -> call.output().byteSize();
            case BARRIER -> 0;
            default -> call.input().byteSize();
        };
    }

    /**
     * For a group that runs every call on the mesh: whether {@code call} is carried, else only
     * agreed on (a call that moves no bytes needs only its signature checked).
     */
    public static boolean carried(Collective call) {
        return alwaysCarried(call) || bytes(call) > 0;
    }
}
